//===- MLAOps.td - operations of the mla dialect -----------*- tablegen -*-===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLAOPS_TD
#define MLAGEN_DIALECT_MLA_IR_MLAOPS_TD

include "mlagen/Dialect/MLA/IR/MLAAttrs.td"
include "mlir/IR/SymbolInterfaces.td"

def MLA_PrefillOp : MLA_Op<"prefill", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a flash-attention prefill kernel variant";
  let description = [{
    One variable-length prefill kernel: for each sequence, softmax(q kᵀ)
    v over the keys the mask and window let each query see, with an
    optional tanh soft cap on the logits and an optional log-sum-exp
    output. qk_head_dim and v_head_dim are independent (MLA prefill is
    192/128). q_heads is a multiple of kv_heads (grouped-query attention).

    The fields a user writes come first, then the ones passes fill in
    (`tiling`, `launch`), then the dtypes and layout, as types trail an op:

    ```mlir
    mla.prefill @deepseek_v3 qk_head_dim = 192, v_head_dim = 128,
        q_heads = 16, kv_heads = 16, mask = causal, lse, arch = gfx942,
        q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
    ```

    `window` absent means unbounded, `soft_cap` absent means off,
    `tile_q` present pins the query tile, `arch` absent takes the target of
    mla-select-tiling.
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    MLA_IntAttr:$qk_head_dim,
    MLA_IntAttr:$v_head_dim,
    ConfinedAttr<MLA_IntAttr, [IntPositive]>:$q_heads,
    ConfinedAttr<MLA_IntAttr, [IntPositive]>:$kv_heads,
    MLA_MaskAttr:$mask,
    OptionalAttr<MLA_WindowAttr>:$window,
    OptionalAttr<F32Attr>:$soft_cap,
    UnitAttr:$lse,
    OptionalAttr<MLA_IntAttr>:$tile_q,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_TilingAttr>:$tiling,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    MLA_DTypeAttr:$q_type,
    MLA_DTypeAttr:$kv_type,
    MLA_DTypeAttr:$out_type,
    MLA_KVLayoutAttr:$layout
  );

  // An enum attribute prints its own leading space; `` drops the op's.
  let assemblyFormat = [{
    $sym_name
    `qk_head_dim` `=` $qk_head_dim `,` `v_head_dim` `=` $v_head_dim `,`
    `q_heads` `=` $q_heads `,` `kv_heads` `=` $kv_heads `,`
    `mask` `=` `` $mask `,`
    (`window` `=` $window^ `,`)?
    (`soft_cap` `=` $soft_cap^ `,`)?
    (`lse` $lse^ `,`)?
    (`tile_q` `=` $tile_q^ `,`)?
    (`arch` `=` `` $arch^ `,`)?
    (`tiling` `=` $tiling^ `,`)?
    (`launch` `=` $launch^ `,`)?
    `q_type` `=` `` $q_type `,` `kv_type` `=` `` $kv_type `,`
    `out_type` `=` `` $out_type `,` `layout` `=` `` $layout
    attr-dict
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Window bounds, -1 (unbounded) when there is no window.
    int32_t getWindowLeft();
    int32_t getWindowRight();
    /// The soft cap, 0 when it is off.
    float getSoftCapValue();
    /// Dynamic shared memory the prefill kernel uses for this tiling, by the
    /// formula of templates/CONTRACT.md: a Q tile and `stages` K and V
    /// tiles of 2-byte elements, each row padded by 8 elements.
    int64_t getSharedBytes(int64_t tileQ, int64_t tileK, int64_t stages);
  }];
}

#endif // MLAGEN_DIALECT_MLA_IR_MLAOPS_TD
