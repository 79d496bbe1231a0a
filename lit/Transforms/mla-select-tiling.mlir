// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-select-tiling | FileCheck %s

// Each target's preferred tiling; tile_q is 16 * warps, except on sm_90a's
// warpgroup (wgmma) kernel: a producer warpgroup plus one per 64 rows.
// CHECK-LABEL: mla.prefill @sm_90a
//  CHECK-SAME:   arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_80
//  CHECK-SAME:   arch = sm_80, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>,
// CHECK-LABEL: mla.prefill @gfx90a
//  CHECK-SAME:   arch = gfx90a, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>,
// CHECK-LABEL: mla.prefill @gfx942
//  CHECK-SAME:   arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>,
// CHECK-LABEL: mla.prefill @gfx950
//  CHECK-SAME:   arch = gfx950, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 32>,
mla.prefill @sm_90a qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_80 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gfx90a qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = gfx90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gfx942 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gfx950 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// sm_90a, head dim 64 with a soft cap and a window: one consumer warpgroup
// (two spill in their 240 registers).
// CHECK-LABEL: mla.prefill @sm_90a_d64_capped
//  CHECK-SAME:   tiling = <tile_q = 64, tile_k = 128, warps = 8, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
mla.prefill @sm_90a_d64_capped qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, window = <left = 4095, right = 0>, soft_cap = 50.0, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// sm_90a, head dim 64 in bf16 without soft cap or window: three consumer
// warpgroups of 160 registers (192 rows, 16 warps). With a window they
// spill: two, as for wider heads. fp16 takes three too.
// CHECK-LABEL: mla.prefill @sm_90a_d64
//  CHECK-SAME:   tiling = <tile_q = 192, tile_k = 128, warps = 16, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_90a_d64_pinned_128
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 128, warps = 12,
// CHECK-LABEL: mla.prefill @sm_90a_d64_window
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 128, warps = 12,
// CHECK-LABEL: mla.prefill @sm_90a_d64_fp16
//  CHECK-SAME:   tiling = <tile_q = 192, tile_k = 128, warps = 16,
// CHECK-LABEL: mla.prefill @sm_90a_d128
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 128, warps = 12,
mla.prefill @sm_90a_d64 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_d64_pinned_128 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, tile_q = 128, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_d64_window qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, window = <left = 4095, right = 0>, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_d64_fp16 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, arch = sm_90a, q_type = f16, kv_type = f16, out_type = f16, layout = varlen
mla.prefill @sm_90a_d128 qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A pinned tile_q of 192 takes three consumers only where they fit (d64
// above); elsewhere it is mma.sync's 12 warps. A v head dim in more slabs
// than qk's (the output is staged in Q's slabs) also goes to mma.sync.
// CHECK-LABEL: mla.prefill @sm_90a_d256_pinned_192
//  CHECK-SAME:   tiling = <tile_q = 192, tile_k = {{[0-9]+}}, warps = 12, wave_size = 32, stages = {{[0-9]}}, mma_m = 16,
// CHECK-LABEL: mla.prefill @sm_90a_d64_pinned_192
//  CHECK-SAME:   tiling = <tile_q = 192, tile_k = 128, warps = 16, wave_size = 32, stages = 2, mma_m = 64,
// CHECK-LABEL: mla.prefill @sm_90a_64x128
//  CHECK-SAME:   mma_m = 16, mma_n = 8, mma_k = 16>,
mla.prefill @sm_90a_d256_pinned_192 qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 8, mask = causal, tile_q = 192, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_d64_pinned_192 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, tile_q = 192, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_64x128 qk_head_dim = 64, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// Too big for shared memory: give up the second stage, then halve tile_k,
// then tile_q, until it fits.
// sm_90a, 576/512: the wide V rules out the wgmma kernel; for mma.sync one
// stage and tile_k 32 fit in 227 KiB.
// CHECK-LABEL: mla.prefill @sm_90a_576x512
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 32, warps = 8, wave_size = 32, stages = 1,
// sm_80 has 163 KiB: tile_k 16 is not enough, tile_q halves.
// CHECK-LABEL: mla.prefill @sm_80_576x512
//  CHECK-SAME:   tiling = <tile_q = 64, tile_k = 16, warps = 4, wave_size = 32, stages = 1,
// gfx942's 64 KiB of LDS takes everything down to one MFMA tile.
// CHECK-LABEL: mla.prefill @gfx942_576x512
//  CHECK-SAME:   tiling = <tile_q = 16, tile_k = 16, warps = 1, wave_size = 64, stages = 1,
// gfx950's MFMA is 32 deep: tile_k stops at 32 and tile_q halves.
// CHECK-LABEL: mla.prefill @gfx950_576x512
//  CHECK-SAME:   tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1,
// sm_80, 64/512: the wide V costs the second stage only.
// CHECK-LABEL: mla.prefill @sm_80_64x512
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 1,
mla.prefill @sm_90a_576x512 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, kv_heads = 1, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_80_576x512 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, kv_heads = 1, mask = causal, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gfx942_576x512 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, kv_heads = 1, mask = causal, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gfx950_576x512 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, kv_heads = 1, mask = causal, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_80_64x512 qk_head_dim = 64, v_head_dim = 512, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// sm_90a's wgmma kernel keeps two stages and narrows tile_k to 80 to fit
// (256/256: 1024 + 2 * (128 * 256 + 2 * 80 * 512) + 72 = 230472 of 232448
// bytes), takes a pinned tile_q of
// 64 (one consumer warpgroup), and takes head dims that end inside a
// 64-element slab (80, 96) up to 128, or past it in 32-column products
// (160); 144 (16-column products spill), and heads below 64, go to mma.sync.
// CHECK-LABEL: mla.prefill @sm_90a_256x256
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 80, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_90a_pinned_64
//  CHECK-SAME:   tiling = <tile_q = 64, tile_k = 128, warps = 8, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_90a_80x80
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_90a_96x96
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 128, warps = 12,
// CHECK-LABEL: mla.prefill @sm_90a_160x160
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 80, warps = 12,
// CHECK-LABEL: mla.prefill @sm_90a_144x144
//  CHECK-SAME:   tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>,
// CHECK-LABEL: mla.prefill @sm_90a_48x48
//  CHECK-SAME:   mma_m = 16, mma_n = 8, mma_k = 16>,
mla.prefill @sm_90a_256x256 qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_pinned_64 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, tile_q = 64, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_80x80 qk_head_dim = 80, v_head_dim = 80, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_96x96 qk_head_dim = 96, v_head_dim = 96, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_160x160 qk_head_dim = 160, v_head_dim = 160, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_144x144 qk_head_dim = 144, v_head_dim = 144, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_48x48 qk_head_dim = 48, v_head_dim = 48, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A pinned tile_q is kept: warps follow it, and tile_k shrinks instead.
// CHECK-LABEL: mla.prefill @pinned_small
//  CHECK-SAME:   tile_q = 32, arch = sm_90a, tiling = <tile_q = 32, tile_k = 64, warps = 2, wave_size = 32, stages = 2,
// CHECK-LABEL: mla.prefill @pinned_large
//  CHECK-SAME:   tile_q = 128, arch = gfx942, tiling = <tile_q = 128, tile_k = 16, warps = 8, wave_size = 64, stages = 1,
mla.prefill @pinned_small qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, tile_q = 32, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @pinned_large qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, tile_q = 128, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A tiling already in the IR is a decision made: it is kept.
// CHECK-LABEL: mla.prefill @tiled
//  CHECK-SAME:   tiling = <tile_q = 32, tile_k = 16, warps = 2, wave_size = 32, stages = 1, mma_m = 16, mma_n = 8, mma_k = 16>,
mla.prefill @tiled qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = sm_90a, tiling = <tile_q = 32, tile_k = 16, warps = 2, wave_size = 32, stages = 1, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'mla.prefill' op no tiling fits gfx942's 65536 bytes of shared memory: the smallest, tile_q = 256 (pinned), tile_k = 16, stages = 1, needs 334336}}
mla.prefill @pinned_too_large qk_head_dim = 576, v_head_dim = 512, q_heads = 16, kv_heads = 1, mask = causal, tile_q = 256, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'mla.prefill' op has no 'arch': name one on the variant or run mla-select-tiling{arch=...}}}
mla.prefill @no_arch qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// gfx950's 32-deep MFMA takes head dim 80 (its last 16 columns run 16 deep).
// CHECK-LABEL: mla.prefill @shallow
//  CHECK-SAME:   arch = gfx950, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 32>,
mla.prefill @shallow qk_head_dim = 80, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
