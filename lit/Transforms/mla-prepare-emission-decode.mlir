// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-prepare-emission | FileCheck %s

// threads = warps * wave size; shared bytes by DECODE_CONTRACT.md's NVIDIA
// formula (the kernel's warp_mma::kSharedBytesUsed): 2 * (16 * 584 + 2 *
// 64 * 584 + 2 * 16 * 72) + 4 * 16 * (8 + 4) = 173568. The reduce runs as
// many threads with no shared memory.
// CHECK-LABEL: mla.decode @sm_90a
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 128, shared_bytes = 173568>,
//  CHECK-SAME:   reduce_launch = <entry = "mlagen_decode_reduce", threads = 128, shared_bytes = 0>,
mla.decode @sm_90a qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 4, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// 64 rows, 48 keys: 2 * (64 * 584 + 2 * 48 * 584 + 2 * 64 * 56) + 4 * 64 *
// (6 + 8) = 204800.
// CHECK-LABEL: mla.decode @sm_90a_64_rows
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 204800>,
//  CHECK-SAME:   reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>,
mla.decode @sm_90a_64_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = sm_90a, tiling = <heads = 128, heads_per_block = 64, tile_k = 48, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// fp8 q on an fp8 cache (sm_90a, e4m3 products): raw e4m3 slabs of 128
// columns, 5 a row: 1024 + 640 * (16 + 3 * 64) + 128 * 16 (P) + 24 * 16 +
// 8 * (1 + 2 * 3) = 136632, and the cluster merge's receive area, 4 * 16 *
// (512 + 5) + 8 = 33096: 169728.
// CHECK-LABEL: mla.decode @sm_90a_fp8_q
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 169728>,
mla.decode @sm_90a_fp8_q qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 3>, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16
// Two consumers taking tiles in turn (12 warps) each have their own P slab
// and row floats: 1024 + 640 * (16 + 3 * 64) + 2 * (128 * 16 + 24 * 16) +
// 8 * (1 + 2 * 3) = 139064, and the receive area: 172160.
// CHECK-LABEL: mla.decode @sm_90a_fp8_q_paired
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 384, shared_bytes = 172160>,
mla.decode @sm_90a_fp8_q_paired qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 12, wave_size = 32, stages = 3>, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16

// CDNA keeps Q in registers; rows padded by MFMA depth / 4 = 4 elements:
// 2 * (32 * 580 + 2 * 16 * 36) + 4 * 16 * (2 + 4) = 39808.
// CHECK-LABEL: mla.decode @gfx942
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 39808>,
//  CHECK-SAME:   reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>,
mla.decode @gfx942 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 1, page_size = 64, lse, arch = gfx942, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// gfx950's 32-deep MFMA pads rows by 8: 2 * (64 * 584 + 2 * 16 * 72) + 4 *
// 16 * (4 + 4) = 79872 (the kernel's wave_mfma::kSharedBytesUsed).
// CHECK-LABEL: mla.decode @gfx950
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 79872>,
mla.decode @gfx950 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = gfx950, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 4, wave_size = 64, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// A hand-written tiling within the kernel's rules.
// CHECK-LABEL: mla.decode @hand_written
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 128, shared_bytes = 97280>,
//  CHECK-SAME:   reduce_launch = <entry = "mlagen_decode_reduce", threads = 128, shared_bytes = 0>,
mla.decode @hand_written qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 32, tile_k = 16, warps = 4, wave_size = 32, stages = 3>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op has no 'tiling': run mla-select-tiling before emission}}
mla.decode @untiled qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' wave_size (32) is not gfx942's (64)}}
mla.decode @wrong_wave qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx942, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 8, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' tile_k (16) must be a multiple of gfx950's MMA depth (32)}}
mla.decode @shallow qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx950, tiling = <heads = 16, heads_per_block = 16, tile_k = 16, warps = 4, wave_size = 64, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' warps (6) must be a power of two up to 32 giving a multiple of 128 threads (or 12 for sm_90a's wgmma kernels: tile_k 64 and 64 rows; 16 or 32 of fp8 q on an fp8 cache, 16 of bf16 q)}}
mla.decode @six_warps qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 6, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' warps (2) must be a power of two up to 32 giving a multiple of 128 threads (or 12 for sm_90a's wgmma kernels: tile_k 64 and 64 rows; 16 or 32 of fp8 q on an fp8 cache, 16 of bf16 q)}}
mla.decode @two_warps qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 2, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// bf16 q on an fp8 cache is split into e4m3 at 16 rows only.
// expected-error @+1 {{'tiling' warps (12) must be a power of two up to 32 giving a multiple of 128 threads (or 12 for sm_90a's wgmma kernels: tile_k 64 and 64 rows; 16 or 32 of fp8 q on an fp8 cache, 16 of bf16 q)}}
mla.decode @twelve_warps_fp8_32_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 32, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 32, heads_per_block = 32, tile_k = 64, warps = 12, wave_size = 32, stages = 3>, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'tiling' warps (12) must be a power of two up to 32 giving a multiple of 128 threads (or 12 for sm_90a's wgmma kernels: tile_k 64 and 64 rows; 16 or 32 of fp8 q on an fp8 cache, 16 of bf16 q)}}
mla.decode @twelve_warps_16_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 12, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' heads_per_block (48) must be 16, 32 or 64}}
mla.decode @three_row_tiles qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 3, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 48, tile_k = 64, warps = 8, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' heads_per_block (128) must be 16, 32 or 64}}
mla.decode @rows_128 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 128, heads_per_block = 128, tile_k = 16, warps = 16, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// O takes 16 * heads_per_block / warps registers on NVIDIA.
// expected-error @+1 {{'tiling' heads_per_block (64) needs more than 128 accumulator registers a thread with 4 warps on sm_90a}}
mla.decode @too_many_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 128, heads_per_block = 64, tile_k = 16, warps = 4, wave_size = 32, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// 8 * heads_per_block / waves on CDNA.
// expected-error @+1 {{'tiling' heads_per_block (64) needs more than 128 accumulator registers a thread with 2 warps on gfx942}}
mla.decode @too_many_rows_cdna qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, arch = gfx942, tiling = <heads = 128, heads_per_block = 64, tile_k = 32, warps = 2, wave_size = 64, stages = 1>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// A hand-written tiling is held to the target's limit like a chosen one.
// expected-error @+1 {{'tiling' needs 246784 bytes of shared memory, sm_80 has 166912}}
mla.decode @too_big qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, arch = sm_80, tiling = <heads = 128, heads_per_block = 64, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// Unsupported variants are refused whatever ran before: gfx90a has no fp8.
// expected-error @+1 {{gfx90a has no fp8 conversion instructions}}
mla.decode @fp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>, q_type = bf16, kv_type = f8E4M3, out_type = bf16
