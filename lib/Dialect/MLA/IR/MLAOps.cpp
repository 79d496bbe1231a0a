//===- MLAOps.cpp - operations of the mla dialect -------------------------===//
#include "mlagen/Dialect/MLA/IR/MLAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlagen::mla;

#define GET_OP_CLASSES
#include "mlagen/Dialect/MLA/IR/MLAOps.cpp.inc"

int32_t PrefillOp::getWindowLeft() {
  WindowAttr window = getWindowAttr();
  return window ? window.getLeft() : -1;
}

int32_t PrefillOp::getWindowRight() {
  WindowAttr window = getWindowAttr();
  return window ? window.getRight() : -1;
}

float PrefillOp::getSoftCapValue() {
  std::optional<APFloat> cap = getSoftCap();
  return cap ? cap->convertToFloat() : 0.0f;
}

int64_t PrefillOp::getSharedBytes(int64_t tileQ, int64_t tileK,
                                  int64_t stages, bool warpgroupKernel) {
  if (warpgroupKernel) {
    // templates/kernels/prefill.hip, kSharedBytesUsed: 1 KiB of alignment
    // slack, the tiles in whole slabs, then 1 + 4 * stages mbarriers.
    int64_t qkRow = llvm::alignTo(getQkHeadDim(), 64);
    int64_t vRow = llvm::alignTo(getVHeadDim(), 64);
    return 1024 + 2 * (tileQ * qkRow + stages * tileK * (qkRow + vRow)) +
           8 * (1 + 4 * stages);
  }
  int64_t qkRow = getQkHeadDim() + 8, vRow = getVHeadDim() + 8;
  return 2 * (tileQ * qkRow + stages * tileK * (qkRow + vRow));
}

bool PrefillOp::fitsWarpgroupKernel() {
  const int64_t qk = getQkHeadDim(), v = getVHeadDim();
  return qk >= 64 && v >= 64 && v <= 256 &&
         llvm::alignTo(v, 64) <= llvm::alignTo(qk, 64);
}

int64_t PrefillOp::getSharedBytes(TilingAttr tiling) {
  return getSharedBytes(tiling.getTileQ(), tiling.getTileK(),
                        tiling.getStages(), tiling.isWarpgroupMMA());
}

LogicalResult PrefillOp::verify() {
  auto checkMultipleOf16 = [&](StringRef field, int32_t value,
                               int32_t max) -> LogicalResult {
    if (value >= 16 && value <= max && value % 16 == 0)
      return success();
    return emitOpError() << "'" << field
                         << "' must be a multiple of 16 in [16, " << max
                         << "], got " << value;
  };
  // The limits are the kernel's: 576/512 is absorbed MLA decode's shape.
  if (failed(checkMultipleOf16("qk_head_dim", getQkHeadDim(), 576)) ||
      failed(checkMultipleOf16("v_head_dim", getVHeadDim(), 512)))
    return failure();
  if (getQHeads() % getKvHeads() != 0)
    return emitOpError() << "'q_heads' (" << getQHeads()
                         << ") must be a multiple of 'kv_heads' ("
                         << getKvHeads() << ")";
  if (float cap = getSoftCapValue(); !std::isfinite(cap) || cap < 0)
    return emitOpError()
           << "'soft_cap' must be finite and >= 0 (0 is off), got " << cap;
  if (std::optional<int32_t> tileQ = getTileQ())
    if (failed(checkMultipleOf16("tile_q", *tileQ, 256)))
      return failure();
  if (getOutType() == DType::F8E4M3)
    return emitOpError() << "'out_type' must be bf16 or f16, got f8E4M3";

  TilingAttr tiling = getTilingAttr();
  if (tiling) {
    if (!getArch())
      return emitOpError() << "'tiling' requires 'arch': a tiling is chosen "
                              "for a target";
    if (std::optional<int32_t> tileQ = getTileQ();
        tileQ && *tileQ != tiling.getTileQ())
      return emitOpError() << "'tiling' tile_q (" << tiling.getTileQ()
                           << ") must equal the pinned 'tile_q' (" << *tileQ
                           << ")";
    // The head dims are the K of Q.K^T and the N of P.V. A 32-deep MFMA
    // (gfx950) runs a 16-column tail of Q.K^T 16 deep (head dim 80); the
    // wgmma kernel (64-row MMA) narrows its P.V products to as few as 16
    // columns where the head dim needs it (80, 112).
    int32_t mmaK = tiling.getMmaK();
    int32_t mmaN = tiling.getNGranule();
    bool qkFits = getQkHeadDim() % mmaK == 0 ||
                  (mmaK == 32 && getQkHeadDim() % 16 == 0);
    if (!qkFits || getVHeadDim() % mmaN != 0)
      return emitOpError() << "'qk_head_dim' (" << getQkHeadDim()
                           << ") must be a multiple of the tiling's 'mma_k' ("
                           << mmaK << "; of 16 where mma_k is 32) and "
                           << "'v_head_dim' (" << getVHeadDim()
                           << ") of its 'mma_n' (" << mmaN << ")";
    if (tiling.isWarpgroupMMA() && !fitsWarpgroupKernel())
      return emitOpError()
             << "head dims " << getQkHeadDim() << "/" << getVHeadDim()
             << " do not suit the wgmma tiling (mma_m 64): it needs "
                "qk_head_dim >= 64, v_head_dim in [64, 256], and v_head_dim "
                "in no more 64-column slabs than qk_head_dim";
  }

  if (LaunchAttr launch = getLaunchAttr()) {
    if (!tiling)
      return emitOpError() << "'launch' requires 'tiling'";
    int32_t threads = tiling.getWarps() * tiling.getWaveSize();
    if (launch.getThreads() != threads)
      return emitOpError() << "'launch' threads (" << launch.getThreads()
                           << ") must equal the tiling's warps * wave_size ("
                           << threads << ")";
    int64_t sharedBytes = getSharedBytes(tiling);
    if (launch.getSharedBytes() != sharedBytes)
      return emitOpError() << "'launch' shared_bytes ("
                           << launch.getSharedBytes()
                           << ") must equal what the tiling uses ("
                           << sharedBytes << ")";
  }
  return success();
}

int32_t DecodeOp::getRows() {
  DecodeTilingAttr tiling = getTilingAttr();
  return getQLen() * (tiling ? tiling.getHeads() : getQHeads());
}

int32_t DecodeOp::getReduceRowsPerBlock() {
  LaunchAttr reduce = getReduceLaunchAttr();
  return reduce ? reduce.getThreads() / 128 : 0;
}

LogicalResult DecodeOp::verify() {
  auto checkMultipleOf16 = [&](StringRef field, int32_t value,
                               int32_t max) -> LogicalResult {
    if (value >= 16 && value <= max && value % 16 == 0)
      return success();
    return emitOpError() << "'" << field
                         << "' must be a multiple of 16 in [16, " << max
                         << "], got " << value;
  };
  if (failed(checkMultipleOf16("qk_head_dim", getQkHeadDim(), 576)) ||
      failed(checkMultipleOf16("v_head_dim", getVHeadDim(), 512)))
    return failure();
  if (getVHeadDim() > getQkHeadDim())
    return emitOpError() << "'v_head_dim' (" << getVHeadDim()
                         << ") must be <= 'qk_head_dim' (" << getQkHeadDim()
                         << "): V is the first v_head_dim columns of the "
                            "latent cache";
  // The cache may be fp8 (dequantised on load), and q too when the cache
  // is (both take the same conversion); out is 16-bit.
  if (getOutType() == DType::F8E4M3)
    return emitOpError() << "'out_type' must be bf16 or f16, got "
                         << stringifyDType(getOutType());
  if (getQType() == DType::F8E4M3 && getKvType() != DType::F8E4M3)
    return emitOpError() << "'q_type' f8E4M3 needs an fp8 cache ('kv_type' "
                            "f8E4M3), got 'kv_type' "
                         << stringifyDType(getKvType());
  if (std::optional<int32_t> tileK = getTileK())
    if (failed(checkMultipleOf16("tile_k", *tileK, 256)))
      return failure();
  if (std::optional<int32_t> tileQ = getTileQ();
      tileQ && *tileQ != 16 && *tileQ != 32 && *tileQ != 64)
    return emitOpError() << "'tile_q' must be 16, 32 or 64 q rows a block, got "
                         << *tileQ;

  DecodeTilingAttr tiling = getTilingAttr();
  if (tiling) {
    if (!getArch())
      return emitOpError() << "'tiling' requires 'arch': a tiling is chosen "
                              "for a target";
    int32_t heads = tiling.getHeads();
    if (heads < getQHeads() || heads % getQHeads() != 0)
      return emitOpError() << "'tiling' heads (" << heads
                           << ") must be a multiple of 'q_heads' ("
                           << getQHeads()
                           << "): padding (AMD, to 16) takes whole multiples";
    if (std::optional<int32_t> tileK = getTileK();
        tileK && *tileK != tiling.getTileK())
      return emitOpError() << "'tiling' tile_k (" << tiling.getTileK()
                           << ") must equal the pinned 'tile_k' (" << *tileK
                           << ")";
    if (std::optional<int32_t> tileQ = getTileQ();
        tileQ && *tileQ != tiling.getHeadsPerBlock())
      return emitOpError() << "'tiling' heads_per_block ("
                           << tiling.getHeadsPerBlock()
                           << ") must equal the pinned 'tile_q' (" << *tileQ
                           << ")";
  }

  LaunchAttr launch = getLaunchAttr(), reduce = getReduceLaunchAttr();
  if ((launch || reduce) && !tiling)
    return emitOpError() << "'launch' and 'reduce_launch' require 'tiling'";
  if (launch) {
    int32_t threads = tiling.getWarps() * tiling.getWaveSize();
    if (launch.getThreads() != threads)
      return emitOpError() << "'launch' threads (" << launch.getThreads()
                           << ") must equal the tiling's warps * wave_size ("
                           << threads << ")";
  }
  if (reduce && reduce.getThreads() % 128 != 0)
    return emitOpError() << "'reduce_launch' threads (" << reduce.getThreads()
                         << ") must be a multiple of 128: the reduce gives "
                            "each q row 128 threads";
  if (static_cast<bool>(launch) != static_cast<bool>(reduce))
    return emitOpError() << "'launch' and 'reduce_launch' come together: "
                            "one code object holds both kernels";
  return success();
}

LogicalResult MergeAttnStatesOp::verify() {
  // A thread moves 8 elements (16 bytes) of one head.
  if (getHeadDim() % 8 != 0)
    return emitOpError() << "'head_dim' must be a multiple of 8 (a 16-byte "
                            "vector of 16-bit elements), got "
                         << getHeadDim();
  if (getOutType() == DType::F8E4M3)
    return emitOpError() << "'out_type' must be bf16 or f16, got "
                         << stringifyDType(getOutType());
  if (getLaunchAttr() && !getArch())
    return emitOpError() << "'launch' requires 'arch': a launch is prepared "
                            "for a target";
  return success();
}

LogicalResult ExpandPageIndicesOp::verify() {
  if (getLaunchAttr() && !getArch())
    return emitOpError() << "'launch' requires 'arch': a launch is prepared "
                            "for a target";
  return success();
}

/// The type rules of a cache write (kv_cache_write, reshape_and_cache) or
/// read (gather_cache): the uncached side, named by `field` and `role`, is
/// 16-bit; an fp8 cache converts it, a 16-bit one copies.
static LogicalResult verifyCacheTypes(Operation *op, StringRef field,
                                      StringRef role, DType uncached,
                                      DType cache, std::optional<Arch> arch,
                                      bool hasLaunch) {
  if (uncached == DType::F8E4M3)
    return op->emitOpError() << "an f8E4M3 cache needs '" << field
                             << "' bf16 or f16 (" << role << ")";
  if (cache != DType::F8E4M3 && uncached != cache)
    return op->emitOpError()
           << "'" << field << "' (" << stringifyDType(uncached)
           << ") must equal 'kv_type' (" << stringifyDType(cache)
           << ") for a 16-bit cache";
  if (cache == DType::F8E4M3 && arch && *arch == Arch::GFX90A)
    return op->emitOpError() << "gfx90a has no fp8 conversion instructions: "
                                "an f8E4M3 cache needs sm_80, sm_90a, gfx942 "
                                "(FNUZ) or gfx950 (OCP)";
  if (hasLaunch && !arch)
    return op->emitOpError() << "'launch' requires 'arch': a launch is "
                                "prepared for a target";
  return success();
}

static LogicalResult verifyCacheWriteTypes(Operation *op, DType input,
                                           DType cache,
                                           std::optional<Arch> arch,
                                           bool hasLaunch) {
  return verifyCacheTypes(op, "in_type", "the new tokens' type", input, cache,
                          arch, hasLaunch);
}

LogicalResult KVCacheWriteOp::verify() {
  // A thread moves 8 elements (16 bytes) of one part of a row.
  for (auto [field, value] : {std::pair{"latent_dim", getLatentDim()},
                              std::pair{"rope_dim", getRopeDim()}})
    if (value % 8 != 0)
      return emitOpError() << "'" << field
                           << "' must be a multiple of 8 (a 16-byte vector "
                              "of 16-bit elements), got "
                           << value;
  return verifyCacheWriteTypes(*this, getInputType(), getKvType(), getArch(),
                               static_cast<bool>(getLaunchAttr()));
}

LogicalResult ReshapeAndCacheOp::verify() {
  // A thread moves 8 elements (16 bytes) of one head.
  if (getHeadDim() % 8 != 0)
    return emitOpError() << "'head_dim' must be a multiple of 8 (a 16-byte "
                            "vector of 16-bit elements), got "
                         << getHeadDim();
  return verifyCacheWriteTypes(*this, getInputType(), getKvType(), getArch(),
                               static_cast<bool>(getLaunchAttr()));
}

LogicalResult GatherCacheOp::verify() {
  // A thread moves 8 elements of one head.
  if (getHeadDim() % 8 != 0)
    return emitOpError() << "'head_dim' must be a multiple of 8 (a thread "
                            "moves 8 elements), got "
                         << getHeadDim();
  return verifyCacheTypes(*this, "out_type", "the gathered tokens' type",
                          getOutputType(), getKvType(), getArch(),
                          static_cast<bool>(getLaunchAttr()));
}

int32_t PagedDecodeOp::getHeadDimPad() {
  return static_cast<int32_t>(llvm::PowerOf2Ceil(getHeadDim()));
}

bool PagedDecodeOp::usesMatrixCores() {
  // NVIDIA's mma.sync kernel: ldmatrix reads 16-bit rows, a k-step is 16
  // columns, and each of the 4 warps takes 16 or 32 keys of a tile. An fp8
  // cache's fragments are widened to fp16 by sm_90a's cvt (sm_80 has none),
  // read 32 columns (two k-steps) at a time.
  std::optional<Arch> arch = getArch();
  if (!arch || (*arch != Arch::SM80 && *arch != Arch::SM90A))
    return false;
  bool fp8 = getKvType() == DType::F8E4M3;
  if (fp8 && *arch != Arch::SM90A)
    return false;
  if (getHeadDim() % (fp8 ? 32 : 16) != 0)
    return false;
  std::optional<int32_t> pinned = getKeyTile();
  return !pinned || *pinned == 64 || *pinned == 128;
}

int32_t PagedDecodeOp::getTileK() {
  if (std::optional<int32_t> pinned = getKeyTile())
    return *pinned;
  if (usesMatrixCores())
    return 64;
  // 128 threads; 8-column chunks split among a key's threads. 256-wide rows
  // take 32 keys so that two tiles stay within CDNA's 64 KB of LDS.
  int32_t pad = getHeadDimPad();
  return pad <= 8 ? 128 : pad >= 256 ? 32 : 64;
}

int32_t PagedDecodeOp::getCacheRowBytes() {
  return getHeadDim() * (getKvType() == DType::F8E4M3 ? 1 : 2);
}

int32_t PagedDecodeOp::getBlocksPerSM() {
  if (!usesMatrixCores())
    return 1;
  // The fp8 kernel is bound by its warps' latency more than by bytes in
  // flight: four blocks of 2 stages beat two of 4 (H200, Llama-3-8B heads:
  // B64 S4096 158 -> 148 us, B128 305 -> 278), and unpadded rows give the
  // four 3 stages (141 and 264 us; bench/notes/paged-decode.md).
  // Up to d128, 8 rows a block (one n-tile of the mma) and 64-key tiles it
  // fits the 128 registers that four blocks leave (128-key tiles spilled).
  // 16-bit caches are bound by bytes in flight: two blocks of 3 stages beat
  // three of 2 at d128.
  bool fp8 = getKvType() == DType::F8E4M3;
  bool fits = getHeadDim() <= 128 && getRowsPerBlock() <= 8 && getTileK() == 64;
  return fp8 && fits ? 4 : 2;
}

int32_t PagedDecodeOp::getCachePitch() {
  // Rows of a multiple of 128 bytes are staged unpadded with their 16-byte
  // chunks swizzled; others are padded by 16 bytes. Either way the 8 rows
  // of an ldmatrix hit 8 bank groups.
  int32_t bytes = getCacheRowBytes();
  return bytes % 128 == 0 ? bytes : bytes + 16;
}

// The matrix-core kernel's shared memory beside its stages: 128 floats of
// per-warp stats, and q as 16 fp16/bf16 rows (the block's rows, zero past
// them).
static int32_t statsAndQBytes(PagedDecodeOp op) {
  return 512 + 16 * (2 * op.getHeadDim() + 16);
}

int32_t PagedDecodeOp::getStages() {
  if (!usesMatrixCores())
    return 1;
  // As many K/V tiles as getBlocksPerSM blocks leave room for in an SM's
  // shared memory (sm_90a 228 KB, sm_80 164 KB; 1 KB reserved a block,
  // beside the stats and q), 2 to 4.
  int64_t perSM = *getArch() == Arch::SM90A ? 233472 : 167936;
  int64_t budget = perSM / getBlocksPerSM() - 1024 - statsAndQBytes(*this);
  int64_t stage = 2 * int64_t(getTileK()) * getCachePitch();
  return static_cast<int32_t>(std::clamp<int64_t>(budget / stage, 2, 4));
}

int32_t PagedDecodeOp::getRowsPerBlock() {
  int32_t rows = getQLen() * (getQHeads() / getKvHeads());
  for (int32_t candidate = std::min(rows, 16); candidate > 1; --candidate)
    if (rows % candidate == 0)
      return candidate;
  return 1;
}

int32_t PagedDecodeOp::getSharedBytes() {
  if (usesMatrixCores()) {
    // kStages K/V tiles of staged cache rows (getCachePitch), then the
    // stats and q.
    return getStages() * 2 * getTileK() * getCachePitch() +
           statsAndQBytes(*this);
  }
  // The template's layout: K and V tiles of rows padded by 16 bytes, fp32
  // scores [rows][tile_k + 4], fp32 q [rows][pad + 4], 32 floats of stats.
  int32_t elemBytes = getKvType() == DType::F8E4M3 ? 1 : 2;
  int32_t tileK = getTileK(), rows = getRowsPerBlock(), pad = getHeadDimPad();
  return 2 * tileK * (pad * elemBytes + 16) + 4 * rows * (tileK + 4) +
         4 * rows * (pad + 4) + 128;
}

LogicalResult PagedDecodeOp::verify() {
  std::optional<int32_t> tile = getKeyTile();
  if (tile && !usesMatrixCores()) {
    // The template's thread maps: 128 / tile threads share a key's 8-column
    // chunks; 128 / chunks PV slices split the tile's keys.
    int32_t chunks = getHeadDimPad() / 8;
    if (*tile != 32 && *tile != 64 && *tile != 128)
      return emitOpError() << "'key_tile' must be 32, 64 or 128, got " << *tile;
    if (chunks % (128 / *tile) != 0 || *tile % (128 / chunks) != 0)
      return emitOpError() << "'key_tile' " << *tile
                           << " does not divide the thread map of head_dim "
                           << getHeadDim();
    if (getSharedBytes() > 64 * 1024)
      return emitOpError() << "'key_tile' " << *tile << " needs "
                           << getSharedBytes()
                           << " bytes of shared memory (limit 65536)";
  }
  if (getQHeads() % getKvHeads() != 0)
    return emitOpError() << "'q_heads' (" << getQHeads()
                         << ") must be a multiple of 'kv_heads' ("
                         << getKvHeads() << ")";
  int32_t multiple = getKvType() == DType::F8E4M3 ? 16 : 8;
  if (getHeadDim() % multiple != 0)
    return emitOpError() << "'head_dim' must be a multiple of " << multiple
                         << " (16-byte cache vectors), got " << getHeadDim();
  if (getWindowLeft() < -1)
    return emitOpError() << "'window' must be -1 (unbounded) or >= 0, got "
                         << getWindowLeft();
  float cap = getSoftCapValue();
  if (!std::isfinite(cap) || cap < 0.0f)
    return emitOpError() << "'soft_cap' must be finite and >= 0 (0 is off), "
                            "got "
                         << cap;
  if (getQType() != getOutType())
    return emitOpError() << "'q_type' (" << stringifyDType(getQType())
                         << ") must equal 'out_type' ("
                         << stringifyDType(getOutType()) << ")";
  if (getOutType() == DType::F8E4M3)
    return emitOpError() << "'out_type' must be bf16 or f16";
  if (getKvType() == DType::F8E4M3) {
    if (getOutType() != DType::BF16)
      return emitOpError() << "an f8E4M3 cache needs bf16 q and out";
    if (getArch() && *getArch() == Arch::GFX90A)
      return emitOpError() << "gfx90a has no fp8 conversion instructions: "
                              "an f8E4M3 cache needs sm_80, sm_90a, gfx942 "
                              "(FNUZ) or gfx950 (OCP)";
  } else if (getKvType() != getQType()) {
    return emitOpError() << "'kv_type' (" << stringifyDType(getKvType())
                         << ") must equal 'q_type' ("
                         << stringifyDType(getQType())
                         << ") or be f8E4M3";
  }
  if ((getLaunchAttr() || getReduceLaunchAttr()) && !getArch())
    return emitOpError() << "'launch' requires 'arch': a launch is prepared "
                            "for a target";
  return success();
}
