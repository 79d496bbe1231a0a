//===- TargetTable.cpp - what the passes know about each GPU --------------===//
#include "TargetTable.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlagen::mla;

// One row per target, so that tuning a target is a one-line change.
// CDNA: wave64 and 16x16 MFMA, 32 deep on gfx950 (templates/prelude/cdna.h);
// one stage, LDS is the scarce resource.
// NVIDIA: warp32 and m16n8k16 mma.sync, and a second K/V stage to overlap
// cp.async with compute; sm_90a prefers its wgmma kernel where the head dims
// allow (SelectTiling.cpp, kWarpgroupMMA), this row is its fallback.
//
// Decode: the kernel owner's defaults (templates/DECODE_CONTRACT.md,
// "Kernel owner's answers") as {tile_k, warps, stages} for blocks of 16, 32
// and 64 q rows. sm_90a is measured on an H200 (8 warps at 16 rows are 10%
// slower than 4; 48 keys x 2 stages is the best 64-row point), the rest
// fitted to shared memory and compile-checked. CDNA keeps one stage: tiles
// stage through registers, so loads overlap math anyway. gfx90a stops at 32
// rows: hiprtc 5.2 spills with 8 waves at 64. AMD pads q heads to 16.
// clang-format off
static constexpr TargetInfo kTargets[] = {
    // arch        wave  shared bytes  mma           tile_q tile_k stages
    //   decode: {tile_k, warps, stages} at 16 / 32 / 64 rows, max rows,
    //           head quantum
    {Arch::GFX90A, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1,
     // The 64-row entry is never chosen (capped at 32 rows).
     {{{32, 4, 1}, {32, 4, 1}, {32, 8, 1}}, 32, 16}},
    {Arch::GFX942, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1,
     {{{32, 4, 1}, {32, 4, 1}, {32, 8, 1}}, 64, 16}},
    {Arch::GFX950, 64, 160 * 1024, {16, 16, 32}, 128, 64, 1,
     {{{64, 4, 1}, {64, 4, 1}, {64, 8, 1}}, 64, 16}},
    {Arch::SM80, 32, 163 * 1024, {16, 8, 16}, 128, 64, 2,
     {{{32, 4, 2}, {32, 4, 2}, {32, 8, 2}}, 64, 1}},
    {Arch::SM90A, 32, 227 * 1024, {16, 8, 16}, 128, 64, 2,
     {{{64, 4, 2}, {64, 4, 2}, {48, 8, 2}}, 64, 1}},
};
// clang-format on

const TargetInfo &mlagen::mla::getTargetInfo(Arch arch) {
  for (const TargetInfo &target : kTargets)
    if (target.arch == arch)
      return target;
  llvm_unreachable("every Arch has a row in kTargets");
}
