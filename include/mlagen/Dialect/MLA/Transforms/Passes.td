//===- Passes.td - passes over mla variants ----------------*- tablegen -*-===//
//
// legalize -> select-tiling{arch} -> prepare-emission, after which the HIP
// emitter only prints (the model of CIRCT's PrepareForEmission).
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_TD
#define MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MLALegalizePass : Pass<"mla-legalize", "::mlir::ModuleOp"> {
  let summary = "Put each variant in canonical form and reject what cannot "
                "be emitted";
  let description = [{
    Canonical form: a causal variant's right window is clipped to 0
    (causality already bounds it there), a window of (-1, -1) and a soft cap
    of 0 are removed (absent means off). Rejects, naming the op and field,
    what no template implements yet: fp8 prefill, paged prefill, k/v or
    output dtypes that differ from q; for decode a cache or output dtype
    that differs from q (except an fp8 e4m3 cache with bf16 q, refused on
    gfx90a, which has no fp8 conversions), head dims other than 576/512.
  }];
  let dependentDialects = ["::mlagen::mla::MLADialect"];
}

def MLASelectTilingPass : Pass<"mla-select-tiling", "::mlir::ModuleOp"> {
  let summary = "Choose tile sizes, warps and pipeline stages per target";
  let description = [{
    Starts from the target's preferred tiling (TargetTable.cpp) and, while
    the kernel's shared memory exceeds the target's limit, reduces the
    stages, then tile_k (down to 16), then tile_q (down to 16). A pinned
    tile_q is kept, or the variant is rejected if no tiling around it fits.
    Sets `arch` from the option where the variant has none, and `tiling`.
    A variant that already has a tiling keeps it.

    Decode: pads q heads to the target's quantum (AMD: 16; a count that
    neither divides 16 nor is a multiple of it is refused), gives a block
    16 q rows if a request's q_len x heads fit in 16, 32 if in 32, else 64
    (capped per target), takes the target's tile_k, warps and stages for
    that many rows (DECODE_CONTRACT.md), and shrinks tile_k, then stages,
    then rows per block to fit shared memory; a pinned tile_k is kept.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "Target for variants that name no arch: gfx90a, gfx942, "
           "gfx950, sm_80 or sm_90a">,
  ];
  let dependentDialects = ["::mlagen::mla::MLADialect"];
}

def MLAPrepareEmissionPass : Pass<"mla-prepare-emission",
                                  "::mlir::ModuleOp"> {
  let summary = "Derive the launch attributes the HIP emitter prints";
  let description = [{
    Checks that each variant is complete (arch, tiling) and fits its target,
    then attaches `#mla.launch`: the kernel entry point the template defines,
    threads per block (warps * wave size) and dynamic shared memory. A
    decode variant also gets `reduce_launch` (mlagen_decode_reduce: the same
    threads, no shared memory).
  }];
  let dependentDialects = ["::mlagen::mla::MLADialect"];
}

#endif // MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_TD
