//===- TargetTable.cpp - what the passes know about each GPU --------------===//
#include "TargetTable.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlagen::mla;

// One row per target, so that tuning a target is a one-line change.
// CDNA: wave64 and 16x16 MFMA, 32 deep on gfx950 (templates/prelude/cdna.h);
// one stage, LDS is the scarce resource.
// NVIDIA: warp32 and m16n8k16 mma.sync (sm_90a wgmma comes later), and a
// second K/V stage to overlap cp.async with compute.
// Decode: on NVIDIA a block owns up to 64 q rows, so 128 heads read each
// key twice and 16 heads once (8 warps keep 64 rows of O in registers). On
// CDNA 16 rows: the kernel needs scratch from 32 rows on (32-48 bytes on
// gfx942/gfx950), and AMD pads q heads to 16 anyway.
static constexpr TargetInfo kTargets[] = {
    // arch        wave  shared bytes  mma           tile_q tile_k stages
    //   decode: tile_k stages warps max rows/block head quantum
    {Arch::GFX90A, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1, {32, 1, 4, 16, 16}},
    {Arch::GFX942, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1, {32, 1, 4, 16, 16}},
    {Arch::GFX950, 64, 160 * 1024, {16, 16, 32}, 128, 64, 1,
     {64, 2, 4, 16, 16}},
    {Arch::SM80, 32, 163 * 1024, {16, 8, 16}, 128, 64, 2, {64, 2, 8, 64, 1}},
    {Arch::SM90A, 32, 227 * 1024, {16, 8, 16}, 128, 64, 2, {64, 2, 8, 64, 1}},
};

const TargetInfo &mlagen::mla::getTargetInfo(Arch arch) {
  for (const TargetInfo &target : kTargets)
    if (target.arch == arch)
      return target;
  llvm_unreachable("every Arch has a row in kTargets");
}
