// RUN: mlagen-translate --mla-to-hip %s --split-input-file --verify-diagnostics

// The emitter only prints: a decode variant the passes have not completed
// is an error, and nothing is written.
// expected-error @+1 {{'mla.decode' op is not prepared for emission: run mla-prepare-emission first}}
mla.decode @unprepared qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// A launch written by hand does not make an fp8 cache printable for gfx90a
// (no fp8 conversions).
// expected-error @+1 {{'mla.decode' op cannot be emitted: an fp8 cache needs bf16 out and an arch with fp8 conversions}}
mla.decode @fp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 39808>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// One kernel per translation unit, whatever its op.
// expected-error @+1 {{expected one variant (mla.prefill, mla.decode, mla.merge_attn_states, mla.expand_page_indices, mla.kv_cache_write, mla.reshape_and_cache, mla.gather_cache or mla.paged_decode) to emit, found 2}}
module {
  mla.prefill @a qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
  mla.decode @b qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 173824>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16
}
