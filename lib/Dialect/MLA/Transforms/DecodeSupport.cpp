//===- DecodeSupport.cpp - what the decode template implements ------------===//
#include "DecodeSupport.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlagen::mla;

LogicalResult mlagen::mla::checkDecodeSupported(DecodeOp op) {
  // An fp8 e4m3 cache (per-tensor kv_scale at run time) is dequantised to
  // bf16 on its way into shared memory: q and out are bf16 then, and the
  // target needs fp8 conversions (OCP on NVIDIA and gfx950, FNUZ on gfx942).
  // fp8 q (its scale folded into softmax_scale at run time) rides the same
  // conversion, so it needs the fp8 cache; out is bf16 then.
  if (op.getKvType() == DType::F8E4M3) {
    if (op.getQType() != DType::BF16 && op.getQType() != DType::F8E4M3)
      return op.emitOpError() << "an fp8 cache ('kv_type' f8E4M3) needs "
                                 "'q_type' bf16 or f8E4M3, got "
                              << stringifyDType(op.getQType());
    if (op.getOutType() != DType::BF16)
      return op.emitOpError() << "an fp8 cache ('kv_type' f8E4M3) writes "
                                 "'out_type' bf16, got "
                              << stringifyDType(op.getOutType());
    if (op.getArch() && *op.getArch() == Arch::GFX90A)
      return op.emitOpError()
             << "gfx90a has no fp8 conversion instructions: an fp8 cache "
                "('kv_type' f8E4M3) needs sm_80, sm_90a, gfx942 (FNUZ) or "
                "gfx950 (OCP)";
  } else if (op.getKvType() != op.getQType())
    return op.emitOpError() << "'kv_type' (" << stringifyDType(op.getKvType())
                            << ") must equal 'q_type' ("
                            << stringifyDType(op.getQType()) << ") for decode";
  if (op.getQType() != DType::F8E4M3 && op.getOutType() != op.getQType())
    return op.emitOpError()
           << "'out_type' (" << stringifyDType(op.getOutType())
           << ") must equal 'q_type' (" << stringifyDType(op.getQType())
           << "): the decode kernel writes q's type";
  if (op.getQkHeadDim() != 576 || op.getVHeadDim() != 512)
    return op.emitOpError()
           << "the decode template implements 'qk_head_dim' 576 and "
              "'v_head_dim' 512 only (absorbed MLA), got "
           << op.getQkHeadDim() << " and " << op.getVHeadDim();
  return success();
}

bool mlagen::mla::isWarpgroupDecode(DecodeOp op, DecodeTilingAttr tiling,
                                    const TargetInfo &target) {
  const int32_t rows = tiling.getHeadsPerBlock(), warps = tiling.getWarps();
  return target.arch == Arch::SM90A && tiling.getTileK() == 64 &&
         tiling.getStages() >= 2 &&
         ((rows <= 32 && warps == 8) || (rows == 64 && warps == 12) ||
          (warps == 12 && op.getKvType() == DType::F8E4M3 &&
           (op.getQType() == DType::F8E4M3 ? rows <= 64 : rows == 16)));
}

bool mlagen::mla::isFP8OperandDecode(DecodeOp op, DecodeTilingAttr tiling) {
  return op.getKvType() == DType::F8E4M3 &&
         (tiling.getHeadsPerBlock() != 64 || op.getQType() == DType::F8E4M3) &&
         (op.getQType() == DType::F8E4M3 || tiling.getWarps() == 12);
}

int64_t mlagen::mla::getDecodeClusterParts(DecodeOp op, DecodeTilingAttr tiling,
                                           const TargetInfo &target) {
  // An fp8 cache widened to fp16 goes through registers and L1, which the
  // receive area's 32 KB of shared memory would take from (B128 H16: 123
  // -> 140 us).
  const bool l1Stream =
      op.getKvType() == DType::F8E4M3 && !isFP8OperandDecode(op, tiling);
  const bool merges = isWarpgroupDecode(op, tiling, target) &&
                      tiling.getHeadsPerBlock() == 16 &&
                      !op.getBatchInvariant() && !l1Stream;
  return merges ? 2 : 1;
}

int64_t mlagen::mla::getDecodeSharedBytes(DecodeOp op, DecodeTilingAttr tiling,
                                          const TargetInfo &target) {
  const int64_t rows = tiling.getHeadsPerBlock(), tileK = tiling.getTileK();
  const int64_t stages = tiling.getStages(), warps = tiling.getWarps();
  const int64_t dqk = op.getQkHeadDim();
  if (isWarpgroupDecode(op, tiling, target)) {
    // 1024 bytes of alignment slack, Q, the stages and P as 16-bit in
    // unpadded swizzled rows, per-warp row maxima of each consumer, alpha
    // and row totals (6 floats a row), q_full and, per stage, full/empty
    // barriers (with 64 rows, one full barrier per 64-column slab and one
    // empty barrier per half, as two consumers free the halves) and, for
    // cluster merging, the partner's fp32 part (O rows of 516 floats and
    // the row LSEs) with its barrier.
    // e4m3 operands: Q and the tiles stay e4m3, in slabs of 128 columns
    // (the last one half used), and P is e4m3 plus its residue; on 12 warps
    // two consumers take tiles in turn, each with its own P and row floats;
    // split bf16 q has twice the Q rows (hi, then lo) and a float a row
    // that undoes its scale.
    const int64_t qkSlabs = dqk / 64;
    const bool merges = getDecodeClusterParts(op, tiling, target) > 1;
    const int64_t mergeBytes = merges ? 4 * rows * (op.getVHeadDim() + 5) + 8 : 0;
    if (isFP8OperandDecode(op, tiling)) {
      const int64_t slabBytes = 128 * ((dqk + 127) / 128);
      const int64_t consumers = warps == 12 ? 2 : 1;
      const bool splitQ = op.getQType() != DType::F8E4M3;
      return 1024 + slabBytes * ((splitQ ? 2 : 1) * rows + stages * tileK) +
             consumers * (128 * rows + 4 * 6 * rows) + (splitQ ? 4 * rows : 0) +
             8 * (1 + 2 * stages) + mergeBytes;
    }
    return 1024 + 2 * (rows * dqk + stages * tileK * dqk + rows * tileK) +
           4 * 6 * rows + 8 * (1 + (rows == 64 ? qkSlabs + 2 : 2) * stages) +
           mergeBytes;
  }
  if (isCDNA(target.arch)) {
    // Q stays in registers; rows are padded by the elements a lane holds
    // of one MFMA operand row (MFMA depth / 4), keys grouped by 16.
    const int64_t pad = target.mma.k / 4;
    return 2 * (stages * tileK * (dqk + pad) + 2 * rows * (tileK + pad)) +
           4 * rows * (tileK / 16 + warps);
  }
  // Rows padded by 8 elements (ldmatrix without bank conflicts), keys
  // grouped by mma.sync's n = 8.
  return 2 * (rows * (dqk + 8) + stages * tileK * (dqk + 8) +
              2 * rows * (tileK + 8)) +
         4 * rows * (tileK / 8 + warps);
}

LogicalResult mlagen::mla::checkDecodeTiling(DecodeOp op,
                                             DecodeTilingAttr tiling,
                                             const TargetInfo &target) {
  StringRef arch = stringifyArch(target.arch);
  if (tiling.getWaveSize() != target.waveSize)
    return op.emitOpError()
           << "'tiling' wave_size (" << tiling.getWaveSize() << ") is not "
           << arch << "'s (" << target.waveSize << ")";
  // Keys are the K of P.V: a multiple of the MMA depth.
  if (tiling.getTileK() % target.mma.k != 0)
    return op.emitOpError() << "'tiling' tile_k (" << tiling.getTileK()
                            << ") must be a multiple of " << arch
                            << "'s MMA depth (" << target.mma.k << ")";
  const int32_t warps = tiling.getWarps(), threads = warps * target.waveSize;
  // The reduce gives each q row 128 threads; the V columns split evenly
  // over warps in 16-column MMA tiles; row tiles and warps are powers of
  // two so the score tile splits evenly too.
  // sm_90a's two-consumer wgmma kernels have 12 (two consumer warpgroups
  // and a producer).
  if (!isWarpgroupDecode(op, tiling, target) &&
      (threads % 128 != 0 || llvm::popcount(uint32_t(warps)) != 1 ||
       warps > 32))
    return op.emitOpError()
           << "'tiling' warps (" << warps
           << ") must be a power of two up to 32 giving a multiple of 128 "
              "threads (or 12 for sm_90a's wgmma kernels: tile_k 64 and "
              "64 rows; 16 or 32 of fp8 q on an fp8 cache, 16 of bf16 q)";
  // Whole 16-row MMA tiles, a power of two of them that the warps split
  // evenly; the kernel is built and checked for 1, 2 and 4.
  const int32_t headsPerBlock = tiling.getHeadsPerBlock();
  if (headsPerBlock != 16 && headsPerBlock != 32 && headsPerBlock != 64)
    return op.emitOpError() << "'tiling' heads_per_block (" << headsPerBlock
                            << ") must be 16, 32 or 64";
  // A warp holds O for every row of the block over its 512 / warps
  // columns; the kernel keeps that within 128 registers a thread:
  // heads_per_block <= 8 * warps on NVIDIA, 16 * warps on CDNA.
  const int32_t rowsPerWarp = isCDNA(target.arch) ? 16 : 8;
  if (headsPerBlock > rowsPerWarp * warps)
    return op.emitOpError()
           << "'tiling' heads_per_block (" << headsPerBlock
           << ") needs more than 128 accumulator registers a thread with "
           << warps << " warps on " << arch;
  int64_t sharedBytes = getDecodeSharedBytes(op, tiling, target);
  if (sharedBytes > target.sharedBytesLimit)
    return op.emitOpError()
           << "'tiling' needs " << sharedBytes << " bytes of shared memory, "
           << arch << " has " << target.sharedBytesLimit;
  return success();
}
