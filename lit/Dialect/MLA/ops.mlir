// RUN: mlagen-opt %s | FileCheck %s
// The generic form reads back to the same ops.
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// MLA prefill: qk and v head dims differ, one kv head per q head.
// CHECK-LABEL: mla.prefill @mla_192x128
//  CHECK-SAME:   qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16,
//  CHECK-SAME:   mask = causal, lse,
//  CHECK-SAME:   q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen{{$}}
mla.prefill @mla_192x128 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// GQA: 32 query heads share 8 kv heads; no LSE, no mask, fp16.
// CHECK-LABEL: mla.prefill @gqa_32x8
//  CHECK-SAME:   qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 8,
//  CHECK-SAME:   mask = none, q_type = f16, kv_type = f16, out_type = f16, layout = varlen{{$}}
mla.prefill @gqa_32x8 qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = none, q_type = f16, kv_type = f16, out_type = f16, layout = varlen

// Narrow qk, wide v, as an absorbed-MLA-shaped value head.
// CHECK-LABEL: mla.prefill @qk64_v512
//  CHECK-SAME:   qk_head_dim = 64, v_head_dim = 512, q_heads = 8, kv_heads = 1,
mla.prefill @qk64_v512 qk_head_dim = 64, v_head_dim = 512, q_heads = 8, kv_heads = 1, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// The largest head dims the kernel takes.
// CHECK-LABEL: mla.prefill @qk576_v512
//  CHECK-SAME:   qk_head_dim = 576, v_head_dim = 512,
mla.prefill @qk576_v512 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, kv_heads = 1, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// Sliding window and a logits soft cap.
// CHECK-LABEL: mla.prefill @window_softcap
//  CHECK-SAME:   mask = none, window = <left = 4096, right = 128>, soft_cap = 3.000000e+01, lse,
mla.prefill @window_softcap qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = 4096, right = 128>, soft_cap = 30.0, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// ALiBi with a soft cap and a window (Gemma-2 style plus ALiBi): prints
// after the cap.
// CHECK-LABEL: mla.prefill @alibi
//  CHECK-SAME:   mask = causal, window = <left = 4095, right = 0>, soft_cap = 5.000000e+01, alibi, lse,
mla.prefill @alibi qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 8, mask = causal, window = <left = 4095, right = 0>, soft_cap = 50.0, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// One side of the window unbounded.
// CHECK-LABEL: mla.prefill @window_left_only
//  CHECK-SAME:   mask = causal, window = <left = 256, right = -1>,
mla.prefill @window_left_only qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, window = <left = 256, right = -1>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// A pinned query tile.
// CHECK-LABEL: mla.prefill @pinned_tile_q
//  CHECK-SAME:   lse, tile_q = 64, q_type
mla.prefill @pinned_tile_q qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, tile_q = 64, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// Every target.
// CHECK-LABEL: mla.prefill @arch_gfx90a
//  CHECK-SAME:   arch = gfx90a,
// CHECK-LABEL: mla.prefill @arch_gfx942
//  CHECK-SAME:   arch = gfx942,
// CHECK-LABEL: mla.prefill @arch_gfx950
//  CHECK-SAME:   arch = gfx950,
// CHECK-LABEL: mla.prefill @arch_sm_80
//  CHECK-SAME:   arch = sm_80,
// CHECK-LABEL: mla.prefill @arch_sm_90a
//  CHECK-SAME:   arch = sm_90a,
mla.prefill @arch_gfx90a qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = gfx90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @arch_gfx942 qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @arch_gfx950 qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @arch_sm_80 qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @arch_sm_90a qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// fp8 inputs and a paged cache are valid IR; mla-legalize rejects them
// for prefill until a template implements them.
// CHECK-LABEL: mla.prefill @fp8_paged
//  CHECK-SAME:   q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = paged{{$}}
mla.prefill @fp8_paged qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = paged

// A variant as mla-prepare-emission leaves it.
// CHECK-LABEL: mla.prefill @prepared
//  CHECK-SAME:   arch = sm_90a,
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>,
//  CHECK-SAME:   launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>,
mla.prefill @prepared qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
