// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-prepare-emission | FileCheck %s

// threads = warps * wave size; shared bytes by the formula of CONTRACT.md:
// 2 * (128 * 200 + 2 * 64 * (200 + 136)) = 137216.
// CHECK-LABEL: mla.prefill @sm_90a
//  CHECK-SAME:   launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 137216>,
mla.prefill @sm_90a qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// sm_90a's wgmma kernel: 12 warps; exactly what it uses: 1 KiB of
// alignment slack, tiles of whole 64-column slabs and 9 mbarriers:
// 1024 + 2 * (128 * 192 + 2 * 128 * (192 + 128)) + 8 * 9 = 214088; head
// dim 80 in two slabs: 1024 + 2 * (128 * 128 + 2 * 128 * (128 + 128)) + 72
// = 164936.
// CHECK-LABEL: mla.prefill @sm_90a_wgmma
//  CHECK-SAME:   launch = <entry = "mlagen_prefill", threads = 384, shared_bytes = 214088>,
// CHECK-LABEL: mla.prefill @sm_90a_wgmma_d80
//  CHECK-SAME:   launch = <entry = "mlagen_prefill", threads = 384, shared_bytes = 164936>,
mla.prefill @sm_90a_wgmma qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @sm_90a_wgmma_d80 qk_head_dim = 80, v_head_dim = 80, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// Four wave64 wavefronts: 2 * (64 * 200 + 32 * (200 + 136)) = 47104.
// CHECK-LABEL: mla.prefill @gfx942
//  CHECK-SAME:   launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 47104>,
mla.prefill @gfx942 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'mla.prefill' op has no 'tiling': run mla-select-tiling before emission}}
mla.prefill @untiled qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tiling' wave_size (32) is not gfx942's (64)}}
mla.prefill @wrong_wave qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 32, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tiling' MMA shape 16x16x16 is not sm_90a's (16x8x16)}}
mla.prefill @wrong_mma qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// The wgmma shape is sm_90a's alone.
// expected-error @+1 {{'tiling' MMA shape 64x64x16 is not sm_80's (16x8x16)}}
mla.prefill @wgmma_on_sm80 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_80, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A hand-written tiling is held to the target's limit like a chosen one.
// expected-error @+1 {{'tiling' needs 137216 bytes of shared memory, gfx942 has 65536}}
mla.prefill @too_big qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = gfx942, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 64, stages = 2, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// Unsupported variants are refused whatever ran before.
// expected-error @+1 {{fp8 prefill is not supported yet ('q_type' is f8E4M3)}}
mla.prefill @fp8 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = varlen

// -----

// One block per query head along grid.y.
// expected-error @+1 {{'q_heads' (65536) exceeds the 65535 blocks a grid's y dimension can launch}}
mla.prefill @many_heads qk_head_dim = 128, v_head_dim = 128, q_heads = 65536, kv_heads = 1, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
