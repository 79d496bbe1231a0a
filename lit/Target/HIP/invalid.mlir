// RUN: mlagen-translate --mla-to-hip %s --split-input-file --verify-diagnostics

// The emitter only prints: a variant the passes have not completed is an
// error, and nothing is written.
// expected-error @+1 {{'mla.prefill' op is not prepared for emission: run mla-prepare-emission first}}
mla.prefill @unprepared qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'mla.prefill' op is not prepared for emission}}
mla.prefill @tiled_only qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A launch written by hand does not make fp8 printable.
// expected-error @+1 {{'mla.prefill' op cannot be emitted: the prefill template has no fp8 inputs}}
mla.prefill @fp8 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = varlen

// -----

// One kernel per translation unit.
// expected-error @+1 {{expected one variant (mla.prefill, mla.decode, mla.merge_attn_states, mla.expand_page_indices, mla.kv_cache_write, mla.reshape_and_cache, mla.gather_cache or mla.paged_decode) to emit, found 2}}
module {
  mla.prefill @a qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
  mla.prefill @b qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
}

// -----

// expected-error @+1 {{expected one variant (mla.prefill, mla.decode, mla.merge_attn_states, mla.expand_page_indices, mla.kv_cache_write, mla.reshape_and_cache, mla.gather_cache or mla.paged_decode) to emit, found 0}}
module {
}
