//===- TargetTable.cpp - what the passes know about each GPU --------------===//
#include "TargetTable.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlagen::mla;

// One row per target, so that tuning a target is a one-line change.
// CDNA: wave64 and 16x16 MFMA, 32 deep on gfx950 (templates/prelude/cdna.h);
// one stage, LDS is the scarce resource.
// NVIDIA: warp32 and m16n8k16 mma.sync (sm_90a wgmma comes later), and a
// second K/V stage to overlap cp.async with compute.
static constexpr TargetInfo kTargets[] = {
    // arch        wave  shared bytes  mma           tile_q tile_k stages
    {Arch::GFX90A, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1},
    {Arch::GFX942, 64, 64 * 1024, {16, 16, 16}, 64, 32, 1},
    {Arch::GFX950, 64, 160 * 1024, {16, 16, 32}, 128, 64, 1},
    {Arch::SM80, 32, 163 * 1024, {16, 8, 16}, 128, 64, 2},
    {Arch::SM90A, 32, 227 * 1024, {16, 8, 16}, 128, 64, 2},
};

const TargetInfo &mlagen::mla::getTargetInfo(Arch arch) {
  for (const TargetInfo &target : kTargets)
    if (target.arch == arch)
      return target;
  llvm_unreachable("every Arch has a row in kTargets");
}
