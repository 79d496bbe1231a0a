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
    optional tanh soft cap on the logits, optional ALiBi biases (per-head
    slopes given at launch, added after the cap, FlashAttention's
    convention: templates/CONTRACT.md) and an optional log-sum-exp
    output. qk_head_dim and v_head_dim are independent (MLA prefill is
    192/128). q_heads is a multiple of kv_heads (grouped-query attention).

    The fields a user writes come first, then the ones passes fill in
    (`tiling`, `launch`), then the dtypes and layout, as types trail an op:

    ```mlir
    mla.prefill @deepseek_v3 qk_head_dim = 192, v_head_dim = 128,
        q_heads = 16, kv_heads = 16, mask = causal, lse, arch = gfx942,
        q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
    ```

    `window` absent means unbounded, `soft_cap` absent means off, `alibi`
    present adds the biases,
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
    UnitAttr:$alibi,
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
    (`alibi` $alibi^ `,`)?
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
    /// formulas of templates/CONTRACT.md: a Q tile and `stages` K and V
    /// tiles of 2-byte elements, each row padded by 8 elements; for
    /// sm_90a's wgmma kernel (`warpgroupKernel`) exactly what it uses:
    /// rows of whole 64-element slabs, alignment slack and barriers.
    int64_t getSharedBytes(int64_t tileQ, int64_t tileK, int64_t stages,
                           bool warpgroupKernel = false);
    /// The same for a tiling (only the wgmma kernel's have 64-row MMAs).
    int64_t getSharedBytes(TilingAttr tiling);
    /// Whether the head dims suit sm_90a's wgmma kernel: qk >= 64, v in
    /// [64, 256], and v in no more 64-column slabs than qk (the output is
    /// staged in the Q tile's slabs).
    bool fitsWarpgroupKernel();
  }];
}

def MLA_DecodeOp : MLA_Op<"decode", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "an absorbed MLA decode kernel variant over a paged cache";
  let description = [{
    One decode kernel (templates/DECODE_CONTRACT.md): every q head attends
    to one latent kv head of qk_head_dim columns read through a block table
    from a cache of `page_size`-key pages; V is the first v_head_dim columns
    of the same rows (DeepSeek: 576 = 512 latent + 64 rope, V 512). A
    request brings q_len query tokens (1, or up to 8 for speculative
    decoding), causal among themselves. The keys are split into chunks by a
    host planner; `batch_invariant` asks it for fixed chunk boundaries.

    ```mlir
    mla.decode @deepseek_v3_tp8 qk_head_dim = 576, v_head_dim = 512,
        q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a,
        q_type = bf16, kv_type = bf16, out_type = bf16
    ```

    `tile_k` present pins the keys per step, `tile_q` the q rows (token x
    head) a block takes (16, 32 or 64, at most the pass's choice: smaller
    blocks put more SMs on small batches); `arch` absent takes the target
    of mla-select-tiling, which sets `tiling` (and pads q heads on AMD);
    mla-prepare-emission sets `launch` (mlagen_decode) and `reduce_launch`
    (mlagen_decode_reduce). The kv cache may be f8E4M3; q and out are 16-bit.
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    MLA_IntAttr:$qk_head_dim,
    MLA_IntAttr:$v_head_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 128>]>:$q_heads,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 8>]>:$q_len,
    ConfinedAttr<MLA_IntAttr, [MLA_IntPowerOf2UpTo<256>]>:$page_size,
    UnitAttr:$lse,
    UnitAttr:$batch_invariant,
    OptionalAttr<MLA_IntAttr>:$tile_k,
    OptionalAttr<MLA_IntAttr>:$tile_q,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_DecodeTilingAttr>:$tiling,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    OptionalAttr<MLA_LaunchAttr>:$reduce_launch,
    MLA_DTypeAttr:$q_type,
    MLA_DTypeAttr:$kv_type,
    MLA_DTypeAttr:$out_type
  );

  let assemblyFormat = [{
    $sym_name
    `qk_head_dim` `=` $qk_head_dim `,` `v_head_dim` `=` $v_head_dim `,`
    `q_heads` `=` $q_heads `,` `q_len` `=` $q_len `,`
    `page_size` `=` $page_size `,`
    (`lse` $lse^ `,`)?
    (`batch_invariant` $batch_invariant^ `,`)?
    (`tile_k` `=` $tile_k^ `,`)?
    (`tile_q` `=` $tile_q^ `,`)?
    (`arch` `=` `` $arch^ `,`)?
    (`tiling` `=` $tiling^ `,`)?
    (`launch` `=` $launch^ `,`)?
    (`reduce_launch` `=` $reduce_launch^ `,`)?
    `q_type` `=` `` $q_type `,` `kv_type` `=` `` $kv_type `,`
    `out_type` `=` `` $out_type
    attr-dict
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// q rows of one request the kernel computes: q_len x the tiling's
    /// heads (q_heads before select-tiling).
    int32_t getRows();
    /// Rows one block of mlagen_decode_reduce merges: the kernel gives each
    /// row 128 threads (DECODE_CONTRACT.md). 0 without a reduce_launch.
    int32_t getReduceRowsPerBlock();
  }];
}

def MLA_MergeAttnStatesOp : MLA_Op<"merge_attn_states", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "merges two partial attention outputs by their LSE";
  let description = [{
    vLLM's merge_attn_states as a kernel variant: for each token and head,
    out = (e^(lse_p - m) o_p + e^(lse_s - m) o_s) / (e^(lse_p - m) +
    e^(lse_s - m)) with m = max(lse_p, lse_s), and optionally
    out_lse = m + log(e^(lse_p - m) + e^(lse_s - m)). A part whose LSE is
    infinite (no key seen) has weight 0; both empty give zeros and -inf.
    o_p, o_s and out are [tokens, heads, head_dim] with strides, the LSEs
    [heads, tokens] fp32 (mla.prefill's layout, so prefill outputs merge as
    they are). A memory-bound elementwise kernel of 16-byte vectors.

    ```mlir
    mla.merge_attn_states @context_merge head_dim = 128, heads = 16,
        out_lse, arch = sm_90a, out_type = bf16
    ```

    `arch` absent takes the target of mla-select-tiling;
    mla-prepare-emission sets `launch` (mlagen_merge_attn_states).
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 1024>]>:$head_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 65535>]>:$heads,
    UnitAttr:$out_lse,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    MLA_DTypeAttr:$out_type
  );

  let assemblyFormat = [{
    $sym_name
    `head_dim` `=` $head_dim `,` `heads` `=` $heads `,`
    (`out_lse` $out_lse^ `,`)?
    (`arch` `=` `` $arch^ `,`)?
    (`launch` `=` $launch^ `,`)?
    `out_type` `=` `` $out_type
    attr-dict
  }];

  let hasVerifier = 1;
}

def MLA_ExpandPageIndicesOp : MLA_Op<"expand_page_indices", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "block table + token ranges -> flat per-token cache slots";
  let description = [{
    Page-index expansion: for request b and its tokens i in [0, cu[b+1] -
    cu[b]), slots[cu[b] + i] = block_table[b][p / page_size] * page_size +
    p % page_size with p = start[b] + i (start 0 when not given: a context
    chunk begins at start). page_size is a config value, any size in
    [1, 4096]; int32 slots (num_blocks * page_size < 2^31).

    ```mlir
    mla.expand_page_indices @pages64 page_size = 64, arch = sm_90a
    ```
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 4096>]>:$page_size,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch
  );

  let assemblyFormat = [{
    $sym_name `page_size` `=` $page_size
    (`,` `arch` `=` `` $arch^)?
    (`,` `launch` `=` $launch^)?
    attr-dict
  }];

  let hasVerifier = 1;
}

def MLA_KVCacheWriteOp : MLA_Op<"kv_cache_write", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "writes new tokens' latent kv and rope key into a paged MLA cache";
  let description = [{
    The MLA KV-cache write (vLLM's concat_and_cache_mla): for token t with
    slot = slot_mapping[t] >= 0 (-1 skips a padded token), row slot of the
    cache [num_blocks, page_size, latent_dim + rope_dim] becomes
    kv_c_normed[t, 0:latent_dim] ++ k_pe[t, 0:rope_dim]. Slots are int32
    or int64 (a run-time choice), block = slot / page_size, offset = slot %
    page_size. A 16-bit cache has the inputs' type; an f8E4M3 cache stores
    fp8(x / scale) of `in_type` (bf16 or f16) inputs with a run-time scale,
    saturated at the largest finite value. 16-byte input vectors.

    ```mlir
    mla.kv_cache_write @deepseek_v3 latent_dim = 512, rope_dim = 64,
        page_size = 64, arch = sm_90a, kv_type = bf16
    mla.kv_cache_write @deepseek_v3_fp8 latent_dim = 512, rope_dim = 64,
        page_size = 64, in_type = bf16, kv_type = f8E4M3
    ```
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 1024>]>:$latent_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 256>]>:$rope_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 4096>]>:$page_size,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    OptionalAttr<MLA_DTypeAttr>:$in_type,
    MLA_DTypeAttr:$kv_type
  );

  let extraClassDeclaration = [{
    /// The new tokens' element type: in_type, or the 16-bit cache's.
    ::mlagen::mla::DType getInputType() {
      return getInType().value_or(getKvType());
    }
  }];

  let assemblyFormat = [{
    $sym_name
    `latent_dim` `=` $latent_dim `,` `rope_dim` `=` $rope_dim `,`
    `page_size` `=` $page_size `,`
    (`arch` `=` `` $arch^ `,`)?
    (`launch` `=` $launch^ `,`)?
    (`in_type` `=` `` $in_type^ `,`)?
    `kv_type` `=` `` $kv_type
    attr-dict
  }];

  let hasVerifier = 1;
}

def MLA_ReshapeAndCacheOp : MLA_Op<"reshape_and_cache", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "writes new tokens' keys and values into paged GQA caches";
  let description = [{
    The GQA KV-cache write (vLLM's reshape_and_cache_flash, NHD layout):
    for token t with slot = slot_mapping[t] >= 0 (-1 skips a padded
    token), k_cache[slot / page_size][slot % page_size][h] = key[t][h] and
    v_cache[...][h] = value[t][h] for each of the kv_heads heads of
    head_dim elements. key and value are [tokens, kv_heads, head_dim], each
    cache [num_blocks, page_size, kv_heads, head_dim], all with strides;
    slots are int32 or int64 (a run-time choice). A 16-bit cache has the
    inputs' type; an f8E4M3 cache stores fp8(x / k_scale) for keys and
    fp8(x / v_scale) for values of `in_type` (bf16 or f16) inputs, run-time
    scales, saturated at the largest finite value. 16-byte input vectors.

    ```mlir
    mla.reshape_and_cache @llama3_8b kv_heads = 8, head_dim = 128,
        page_size = 16, arch = sm_90a, kv_type = bf16
    mla.reshape_and_cache @llama3_8b_fp8 kv_heads = 8, head_dim = 128,
        page_size = 16, in_type = bf16, kv_type = f8E4M3
    ```
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 256>]>:$kv_heads,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 512>]>:$head_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 4096>]>:$page_size,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    OptionalAttr<MLA_DTypeAttr>:$in_type,
    MLA_DTypeAttr:$kv_type
  );

  let extraClassDeclaration = [{
    /// The new tokens' element type: in_type, or the 16-bit cache's.
    ::mlagen::mla::DType getInputType() {
      return getInType().value_or(getKvType());
    }
  }];

  let assemblyFormat = [{
    $sym_name
    `kv_heads` `=` $kv_heads `,` `head_dim` `=` $head_dim `,`
    `page_size` `=` $page_size `,`
    (`arch` `=` `` $arch^ `,`)?
    (`launch` `=` $launch^ `,`)?
    (`in_type` `=` `` $in_type^ `,`)?
    `kv_type` `=` `` $kv_type
    attr-dict
  }];

  let hasVerifier = 1;
}

def MLA_GatherCacheOp : MLA_Op<"gather_cache", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "gathers (and dequantises) tokens of paged GQA caches";
  let description = [{
    The read side of a paged GQA cache (vLLM's gather_and_maybe_dequant_cache
    for the NHD layout), used to attend over a request's context in chunks:
    for flat token i with slot = slots[i] >= 0 and each of the kv_heads
    heads, out_k[i][h] = dequant(k_cache[slot / page_size][slot % page_size][h])
    and out_v likewise; slot -1 writes zeros. Slots are int32 (what
    mla.expand_page_indices writes) or int64, a run-time choice. A 16-bit
    cache is copied bit for bit (out_type = kv_type); an f8E4M3 cache gives
    float(e4m3) * k_scale (v_scale for values), run-time scales, rounded to
    `out_type` (bf16 or f16). Outputs [tokens, kv_heads, head_dim], caches
    [num_blocks, page_size, kv_heads, head_dim], all with strides.

    ```mlir
    mla.gather_cache @llama3_8b kv_heads = 8, head_dim = 128,
        page_size = 16, arch = sm_90a, kv_type = bf16
    mla.gather_cache @llama3_8b_fp8 kv_heads = 8, head_dim = 128,
        page_size = 16, kv_type = f8E4M3, out_type = bf16
    ```
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 256>]>:$kv_heads,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 512>]>:$head_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 4096>]>:$page_size,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    MLA_DTypeAttr:$kv_type,
    OptionalAttr<MLA_DTypeAttr>:$out_type
  );

  let extraClassDeclaration = [{
    /// The gathered tokens' element type: out_type, or the 16-bit cache's.
    ::mlagen::mla::DType getOutputType() {
      return getOutType().value_or(getKvType());
    }
  }];

  let assemblyFormat = [{
    $sym_name
    `kv_heads` `=` $kv_heads `,` `head_dim` `=` $head_dim `,`
    `page_size` `=` $page_size `,`
    (`arch` `=` `` $arch^ `,`)?
    (`launch` `=` $launch^ `,`)?
    `kv_type` `=` `` $kv_type
    (`,` `out_type` `=` `` $out_type^)?
    attr-dict
  }];

  let hasVerifier = 1;
}

def MLA_PagedDecodeOp : MLA_Op<"paged_decode", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a paged GQA decode kernel variant (vLLM's decode for Llama)";
  let description = [{
    One paged GQA decode kernel (templates/PAGED_DECODE_CONTRACT.md): q
    head h attends to kv head h / (q_heads / kv_heads) of separate K and V
    caches of `page_size`-key pages reached through a block table. A
    request brings q_len query tokens (1..8), causal among themselves;
    `window` (>= 0) limits token t to keys >= its position - window, and
    `soft_cap` (> 0) caps the scaled logits by soft_cap * tanh(x / soft_cap)
    and `alibi` adds -slope[h] * (position - key) to the capped logits
    (per-q-head fp32 slopes at run time; prefill's FlashAttention rule).
    Keys are split into chunks by the host planner (DecodePlanner) and
    merged by LSE in a second entry. The caches may be f8E4M3 (per-tensor
    k and v scales at run time) with bf16 q and out.

    ```mlir
    mla.paged_decode @llama3_8b q_heads = 32, kv_heads = 8, head_dim = 128,
        q_len = 1, page_size = 16, lse, arch = sm_90a,
        q_type = bf16, kv_type = bf16, out_type = bf16
    ```

    `arch` absent takes the target of mla-select-tiling; mla-prepare-emission
    sets `launch` (mlagen_paged_decode) and `reduce_launch`
    (mlagen_paged_decode_reduce). The tiling follows from the shape (see
    getTileK, getRowsPerBlock, getStages); `key_tile` (32, 64 or 128) pins
    the keys per step for tuning (32 on NVIDIA selects the CUDA-core
    kernel).
  }];

  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 256>]>:$q_heads,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 128>]>:$kv_heads,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<8, 256>]>:$head_dim,
    ConfinedAttr<MLA_IntAttr, [MLA_IntInRange<1, 8>]>:$q_len,
    ConfinedAttr<MLA_IntAttr, [MLA_IntPowerOf2UpTo<256>]>:$page_size,
    OptionalAttr<MLA_IntAttr>:$window,
    OptionalAttr<F32Attr>:$soft_cap,
    UnitAttr:$alibi,
    UnitAttr:$lse,
    OptionalAttr<MLA_IntAttr>:$key_tile,
    OptionalAttr<MLA_ArchAttr>:$arch,
    OptionalAttr<MLA_LaunchAttr>:$launch,
    OptionalAttr<MLA_LaunchAttr>:$reduce_launch,
    MLA_DTypeAttr:$q_type,
    MLA_DTypeAttr:$kv_type,
    MLA_DTypeAttr:$out_type
  );

  let assemblyFormat = [{
    $sym_name
    `q_heads` `=` $q_heads `,` `kv_heads` `=` $kv_heads `,`
    `head_dim` `=` $head_dim `,` `q_len` `=` $q_len `,`
    `page_size` `=` $page_size `,`
    (`window` `=` $window^ `,`)?
    (`soft_cap` `=` $soft_cap^ `,`)?
    (`alibi` $alibi^ `,`)?
    (`lse` $lse^ `,`)?
    (`key_tile` `=` $key_tile^ `,`)?
    (`arch` `=` `` $arch^ `,`)?
    (`launch` `=` $launch^ `,`)?
    (`reduce_launch` `=` $reduce_launch^ `,`)?
    `q_type` `=` `` $q_type `,` `kv_type` `=` `` $kv_type `,`
    `out_type` `=` `` $out_type
    attr-dict
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The left window, -1 (unbounded) when absent.
    int32_t getWindowLeft() { return getWindow().value_or(-1); }
    /// The soft cap, 0 when it is off.
    float getSoftCapValue() {
      return getSoftCap() ? getSoftCap()->convertToFloat() : 0.0f;
    }
    /// The head dim the kernel computes on: the next power of two (pad
    /// columns are zero).
    int32_t getHeadDimPad();
    /// Whether the kernel runs QK and PV on NVIDIA's mma.sync (sm_80 and
    /// sm_90a with 16-bit caches and head dims a multiple of 16; sm_90a
    /// with an fp8 cache and head dims a multiple of 32; key tile 64 or
    /// 128); otherwise on CUDA cores / CDNA's vector ALUs.
    bool usesMatrixCores();
    /// Bytes of one cache row (head_dim elements of kv_type).
    int32_t getCacheRowBytes();
    /// Bytes of a cache row staged in shared memory on matrix cores: the
    /// row, padded by 16 bytes unless a multiple of 128 (then swizzled).
    int32_t getCachePitch();
    /// Keys per shared-memory tile: 64 on matrix cores (16 per warp), else
    /// 128 / threads per key.
    int32_t getTileK();
    /// Blocks an SM holds on matrix cores (the kernel's launch bounds ask
    /// for them): four for an fp8 cache up to d128 with up to 8 rows a
    /// block and 64-key tiles, else two; 1 (no bound) on CUDA cores.
    int32_t getBlocksPerSM();
    /// K/V tiles in flight (cp.async stages) on matrix cores, as many as
    /// getBlocksPerSM blocks leave room for (2 to 4); 1 otherwise.
    int32_t getStages();
    /// q rows (token x head of one kv head's group) per block: the largest
    /// divisor of q_len x group up to 16.
    int32_t getRowsPerBlock();
    /// Dynamic shared memory of mlagen_paged_decode.
    int32_t getSharedBytes();
    /// Threads of both entries, and rows one reduce block merges.
    static constexpr int32_t kThreads = 128;
    static constexpr int32_t kReduceRowsPerBlock = 4;
  }];
}

#endif // MLAGEN_DIALECT_MLA_IR_MLAOPS_TD
