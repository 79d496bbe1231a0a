//===- MLAAttrs.td - attributes of the mla dialect ---------*- tablegen -*-===//
//
// A variant's inputs are plain attributes on its op. The decisions passes
// make are grouped: `#mla.tiling` is chosen as a whole by
// mla-select-tiling and `#mla.launch` is derived by mla-prepare-emission.
// Grouping keeps each decision's internal rules in one verifier (tile_q is
// warps * mma_m) and lets the emitter ask one question: is it prepared?
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLAATTRS_TD
#define MLAGEN_DIALECT_MLA_IR_MLAATTRS_TD

include "mlagen/Dialect/MLA/IR/MLAEnums.td"
include "mlir/IR/CommonAttrConstraints.td"

// A signless i32 read as a signed int, so that a negative value reaches the
// verifier as the number the user wrote.
def MLA_IntAttr : TypedSignlessIntegerAttrBase<I32, "int32_t",
                                               "32-bit integer attribute"> {
  let convertFromStorage = "static_cast<int32_t>($_self.getInt())";
}

// Range constraints whose summary states the rule in one phrase.
class MLA_IntInRange<int lo, int hi> : AttrConstraint<
    CPred<"::llvm::cast<::mlir::IntegerAttr>($_self).getInt() >= " # lo #
          " && ::llvm::cast<::mlir::IntegerAttr>($_self).getInt() <= " # hi>,
    "whose value is in [" # lo # ", " # hi # "]">;

class MLA_IntPowerOf2UpTo<int hi> : AttrConstraint<
    CPred<"::llvm::cast<::mlir::IntegerAttr>($_self).getInt() >= 1 && "
          "::llvm::cast<::mlir::IntegerAttr>($_self).getInt() <= " # hi #
          " && ::llvm::isPowerOf2_64(::llvm::cast<::mlir::IntegerAttr>("
          "$_self).getInt())">,
    "whose value is a power of two in [1, " # hi # "]">;

def MLA_WindowAttr : MLA_Attr<"Window", "window"> {
  let summary = "sliding window around the diagonal";
  let description = [{
    Query i of a sequence with sq queries and sk keys sees key j only if
    `j >= i + sk - sq - left` (when left >= 0) and `j <= i + sk - sq + right`
    (when right >= 0). -1 leaves that side unbounded.

    ```mlir
    #mla.window<left = 4096, right = 0>
    ```
  }];
  let parameters = (ins "int32_t":$left, "int32_t":$right);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isUnbounded() const { return getLeft() == -1 && getRight() == -1; }
  }];
}

def MLA_TilingAttr : MLA_Attr<"Tiling", "tiling"> {
  let summary = "how a prefill variant is split over blocks and warps";
  let description = [{
    Chosen by mla-select-tiling from the target table. Each warp (NVIDIA) or
    wavefront (CDNA) owns mma_m query rows, so tile_q = warps * mma_m.
    tile_k keys are processed per inner step, with `stages` K/V buffers in
    shared memory. The MMA shape is the target's matrix instruction
    (m16n8k16 mma.sync on NVIDIA, 16x16x16 MFMA on CDNA, 16x16x32 on gfx950).
    mma_m = 64 is sm_90a's warpgroup MMA (wgmma, 64 x 64 x 16 granules): a
    producer warpgroup plus one consumer warpgroup per 64 query rows, so
    warps = 4 * (tile_q / 64 + 1).

    ```mlir
    #mla.tiling<tile_q = 128, tile_k = 64, warps = 8, wave_size = 32,
                stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>
    ```
  }];
  let parameters = (ins "int32_t":$tile_q, "int32_t":$tile_k,
                        "int32_t":$warps, "int32_t":$wave_size,
                        "int32_t":$stages, "int32_t":$mma_m,
                        "int32_t":$mma_n, "int32_t":$mma_k);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the MMA is sm_90a's warpgroup MMA (mma_m 64).
    bool isWarpgroupMMA() const { return getMmaM() == 64; }
    /// The granule of an MMA's N: mma_n, but any multiple of 16 for a wgmma.
    static int32_t nGranule(int32_t mmaM, int32_t mmaN) {
      return mmaM == 64 ? 16 : mmaN;
    }
    int32_t getNGranule() const { return nGranule(getMmaM(), getMmaN()); }
  }];
}

def MLA_DecodeTilingAttr : MLA_Attr<"DecodeTiling", "decode_tiling"> {
  let summary = "how an absorbed MLA decode variant is split over blocks";
  let description = [{
    Chosen by mla-select-tiling from the target table. `heads` is the heads
    per token of the kernel's row numbering (kNumHeads): q_heads, or on AMD
    q_heads padded to 16 (padded heads read zero q and write nothing). A
    block owns `heads_per_block` of a request's q rows (q_len x heads, 16 per
    MMA tile) and reads its keys `tile_k` at a time through `stages`
    shared-memory buffers with `warps` warps (NVIDIA) or wavefronts (CDNA)
    of `wave_size` lanes.

    ```mlir
    #mla.decode_tiling<heads = 16, heads_per_block = 16, tile_k = 64,
                       warps = 4, wave_size = 32, stages = 2>
    ```
  }];
  let parameters = (ins "int32_t":$heads, "int32_t":$heads_per_block,
                        "int32_t":$tile_k, "int32_t":$warps,
                        "int32_t":$wave_size, "int32_t":$stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def MLA_LaunchAttr : MLA_Attr<"Launch", "launch"> {
  let summary = "the kernel's entry point and launch geometry";
  let description = [{
    Derived by mla-prepare-emission: what the host needs to launch the
    emitted kernel. Its presence marks a variant ready for emission.

    ```mlir
    #mla.launch<entry = "mlagen_prefill", threads = 256, shared_bytes = 110592>
    ```
  }];
  let parameters = (ins StringRefParameter<"extern \"C\" kernel name">:$entry,
                        "int32_t":$threads, "int32_t":$shared_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // MLAGEN_DIALECT_MLA_IR_MLAATTRS_TD
