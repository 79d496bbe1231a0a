//===- MLAAttrs.cpp - enums and attributes of the mla dialect -------------===//
#include "mlagen/Dialect/MLA/IR/MLAAttrs.h"
#include "mlagen/Dialect/MLA/IR/MLADialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlagen::mla;

#include "mlagen/Dialect/MLA/IR/MLAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mlagen/Dialect/MLA/IR/MLAAttrs.cpp.inc"

void MLADialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mlagen/Dialect/MLA/IR/MLAAttrs.cpp.inc"
      >();
}

LogicalResult WindowAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int32_t left, int32_t right) {
  for (auto [name, value] : {std::pair{"left", left}, {"right", right}})
    if (value < -1)
      return emitError() << "window '" << name
                         << "' must be >= -1 (-1 is unbounded), got " << value;
  return success();
}

LogicalResult TilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int32_t tileQ, int32_t tileK, int32_t warps,
                                 int32_t waveSize, int32_t stages, int32_t mmaM,
                                 int32_t mmaN, int32_t mmaK) {
  for (auto [name, value] : {std::pair{"tile_q", tileQ},
                             {"tile_k", tileK},
                             {"warps", warps},
                             {"stages", stages},
                             {"mma_m", mmaM},
                             {"mma_n", mmaN},
                             {"mma_k", mmaK}})
    if (value <= 0)
      return emitError() << "tiling '" << name << "' must be positive, got "
                         << value;
  if (waveSize != 32 && waveSize != 64)
    return emitError() << "tiling 'wave_size' must be 32 or 64, got "
                       << waveSize;
  // mma_m 64 is a warpgroup instruction (sm_90a wgmma): one producer
  // warpgroup of 4 warps plus one consumer warpgroup per 64 query rows.
  if (mmaM == 64 && (tileQ % 64 != 0 || warps != 4 * (tileQ / 64 + 1)))
    return emitError() << "tiling 'warps' (" << warps
                       << ") must be 4 * ('tile_q' (" << tileQ
                       << ") / 64 + 1) with 'mma_m' 64: a producer warpgroup "
                          "and a consumer warpgroup per 64 query rows";
  if (mmaM == 64 && tileQ > 192)
    return emitError() << "tiling 'tile_q' (" << tileQ
                       << ") must be at most 192 with 'mma_m' 64: up to three "
                          "consumer warpgroups";
  if (mmaM == 64 && tileK != 64 && tileK != 80 && tileK != 96 && tileK != 128)
    return emitError() << "tiling 'tile_k' (" << tileK
                       << ") must be 64, 80, 96 or 128 with 'mma_m' 64";
  if (mmaM != 64 && tileQ != warps * mmaM)
    return emitError() << "tiling 'tile_q' (" << tileQ
                       << ") must equal 'warps' (" << warps << ") * 'mma_m' ("
                       << mmaM << "): each warp owns mma_m query rows";
  // tile_k is the N of Q.K^T and the K of P.V; a wgmma's N is any multiple
  // of 16 here (the kernel takes tile_k 64, 80, 96 and 128).
  const int32_t granuleN = nGranule(mmaM, mmaN);
  if (tileK % granuleN != 0 || tileK % mmaK != 0)
    return emitError() << "tiling 'tile_k' (" << tileK
                       << ") must be a multiple of 'mma_n' (" << granuleN
                       << (mmaM == 64 ? " for a wgmma" : "")
                       << ") and 'mma_k' (" << mmaK << ")";
  return success();
}

LogicalResult
DecodeTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int32_t heads, int32_t headsPerBlock, int32_t tileK,
                         int32_t warps, int32_t waveSize, int32_t stages) {
  for (auto [name, value] : {std::pair{"heads", heads},
                             {"heads_per_block", headsPerBlock},
                             {"tile_k", tileK},
                             {"warps", warps},
                             {"stages", stages}})
    if (value <= 0)
      return emitError() << "decode_tiling '" << name
                         << "' must be positive, got " << value;
  if (waveSize != 32 && waveSize != 64)
    return emitError() << "decode_tiling 'wave_size' must be 32 or 64, got "
                       << waveSize;
  // The kernel's q rows and keys come in 16-row MMA tiles.
  if (headsPerBlock % 16 != 0 || tileK % 16 != 0)
    return emitError() << "decode_tiling 'heads_per_block' (" << headsPerBlock
                       << ") and 'tile_k' (" << tileK
                       << ") must be multiples of 16";
  return success();
}

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef entry, int32_t threads,
                                 int32_t sharedBytes) {
  bool isIdentifier =
      !entry.empty() && !llvm::isDigit(entry.front()) &&
      llvm::all_of(entry, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  if (!isIdentifier)
    return emitError() << "launch 'entry' must be a C identifier, got \""
                       << entry << "\"";
  if (threads <= 0 || threads > 1024)
    return emitError() << "launch 'threads' must be in [1, 1024], got "
                       << threads;
  if (sharedBytes < 0)
    return emitError() << "launch 'shared_bytes' must be >= 0, got "
                       << sharedBytes;
  return success();
}
