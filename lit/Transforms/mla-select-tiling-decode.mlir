// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-select-tiling | FileCheck %s

// Each target's decode tiling (DECODE_CONTRACT.md, "Kernel owner's
// answers"): a block owns 16 q rows if a request's q_len x heads fit in 16,
// 32 if in 32, else 64 (gfx90a: at most 32), with the target's tile_k,
// warps and stages for that many rows; all of them fit shared memory.
// sm_90a: the wgmma kernel's 64-key tiles and two stages, with 8 warps
// (producer and consumer warpgroups) at 16 or 32 rows, 12 (two consumers)
// at 64 rows of a 16-bit cache.
// CHECK-LABEL: mla.decode @sm_90a_tp8
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>,
// An fp8 cache read with bf16 q at 16 rows is multiplied as e4m3 (q split
// into hi + lo): three stages of 40 KB, two consumers taking tiles in turn.
// CHECK-LABEL: mla.decode @sm_90a_tp8_fp8
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 12, wave_size = 32, stages = 3>,
// 128 heads: 64 rows a block.
// CHECK-LABEL: mla.decode @sm_90a_tp1
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 64, warps = 12, wave_size = 32, stages = 2>,
// An fp8 cache read with bf16 q from pages of 64 keys keeps 64 rows: the
// two-consumer kernel, whose producer widens the raw tiles in place in each
// stage half. Other pages take 32-row blocks of the one-consumer kernel
// that widens through registers.
// CHECK-LABEL: mla.decode @sm_90a_tp1_fp8
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 64, warps = 12, wave_size = 32, stages = 2>,
// CHECK-LABEL: mla.decode @sm_90a_tp1_fp8_page_16
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 32, tile_k = 64, warps = 8, wave_size = 32, stages = 2>,
// fp8 q on an fp8 cache multiplies e4m3 tiles of 40 KB: three stages, two
// consumers taking tiles in turn (12 warps); at 64 rows the seesaw's two
// consumers, in four stages (its fp32 staging of O at the end needs them).
// CHECK-LABEL: mla.decode @sm_90a_tp8_fp8_q
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 12, wave_size = 32, stages = 3>,
// CHECK-LABEL: mla.decode @sm_90a_tp1_fp8_q
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 64, warps = 12, wave_size = 32, stages = 4>,
// 4 tokens x 16 heads = 64 rows.
// CHECK-LABEL: mla.decode @sm_90a_mtp
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 64, tile_k = 64, warps = 12, wave_size = 32, stages = 2>,
// 2 tokens x 8 heads = 16 rows; 4 tokens x 8 heads = 32.
// CHECK-LABEL: mla.decode @sm_90a_8_tokens_2
//  CHECK-SAME:   tiling = <heads = 8, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>,
// CHECK-LABEL: mla.decode @sm_90a_8_tokens_4
//  CHECK-SAME:   tiling = <heads = 8, heads_per_block = 32, tile_k = 64, warps = 8, wave_size = 32, stages = 2>,
// sm_80's 163 KiB per block: 32 keys a step.
// CHECK-LABEL: mla.decode @sm_80_tp8
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 32, stages = 2>,
// CHECK-LABEL: mla.decode @sm_80_tp1
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 32, warps = 8, wave_size = 32, stages = 2>,
// gfx950: 160 KiB of LDS, 32-deep MFMA; CDNA keeps one stage.
// CHECK-LABEL: mla.decode @gfx950_tp8
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 4, wave_size = 64, stages = 1>,
// CHECK-LABEL: mla.decode @gfx950_tp1_mtp
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 64, warps = 8, wave_size = 64, stages = 1>,
// gfx942: 64 KiB of LDS.
// CHECK-LABEL: mla.decode @gfx942_tp8
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>,
// CHECK-LABEL: mla.decode @gfx942_tp1
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 64, tile_k = 32, warps = 8, wave_size = 64, stages = 1>,
// gfx90a stops at 32 rows (hiprtc 5.2 spills with 8 waves at 64).
// CHECK-LABEL: mla.decode @gfx90a_tp1
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 32, tile_k = 32, warps = 4, wave_size = 64, stages = 1>,
mla.decode @sm_90a_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_90a_tp8_fp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @sm_90a_tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_90a_tp1_fp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @sm_90a_tp1_fp8_page_16 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 16, lse, arch = sm_90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @sm_90a_tp8_fp8_q qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16
mla.decode @sm_90a_tp1_fp8_q qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16
mla.decode @sm_90a_mtp qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 4, page_size = 1, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_90a_8_tokens_2 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 2, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_90a_8_tokens_4 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 4, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_80_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_80_tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx950_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx950_tp1_mtp qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 2, page_size = 64, lse, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx90a_tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, arch = gfx90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// AMD pads q heads to 16 where 16 is a multiple of the count; multiples of
// 16 stay. NVIDIA pads nothing.
// CHECK-LABEL: mla.decode @gfx942_1
//  CHECK-SAME:   q_heads = 1, {{.*}}tiling = <heads = 16, heads_per_block = 16,
// CHECK-LABEL: mla.decode @gfx942_2
//  CHECK-SAME:   tiling = <heads = 16,
// CHECK-LABEL: mla.decode @gfx942_4
//  CHECK-SAME:   tiling = <heads = 16,
// CHECK-LABEL: mla.decode @gfx950_8
//  CHECK-SAME:   tiling = <heads = 16,
// CHECK-LABEL: mla.decode @gfx90a_16
//  CHECK-SAME:   tiling = <heads = 16,
// CHECK-LABEL: mla.decode @gfx942_32
//  CHECK-SAME:   tiling = <heads = 32, heads_per_block = 32,
// CHECK-LABEL: mla.decode @gfx942_48
//  CHECK-SAME:   tiling = <heads = 48, heads_per_block = 64,
// Rows count the padded heads: 2 tokens x 16.
// CHECK-LABEL: mla.decode @gfx942_8_tokens_2
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 32,
// CHECK-LABEL: mla.decode @sm_90a_3
//  CHECK-SAME:   tiling = <heads = 3, heads_per_block = 16,
// CHECK-LABEL: mla.decode @sm_80_12
//  CHECK-SAME:   tiling = <heads = 12, heads_per_block = 16,
// CHECK-LABEL: mla.decode @sm_80_48
//  CHECK-SAME:   tiling = <heads = 48, heads_per_block = 64,
mla.decode @gfx942_1 qk_head_dim = 576, v_head_dim = 512, q_heads = 1, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_2 qk_head_dim = 576, v_head_dim = 512, q_heads = 2, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_4 qk_head_dim = 576, v_head_dim = 512, q_heads = 4, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx950_8 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 1, page_size = 64, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx90a_16 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_32 qk_head_dim = 576, v_head_dim = 512, q_heads = 32, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_48 qk_head_dim = 576, v_head_dim = 512, q_heads = 48, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @gfx942_8_tokens_2 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 2, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_90a_3 qk_head_dim = 576, v_head_dim = 512, q_heads = 3, q_len = 1, page_size = 64, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_80_12 qk_head_dim = 576, v_head_dim = 512, q_heads = 12, q_len = 1, page_size = 64, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @sm_80_48 qk_head_dim = 576, v_head_dim = 512, q_heads = 48, q_len = 1, page_size = 64, arch = sm_80, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op 'q_heads' (12) cannot be padded on gfx942: decode there pads q heads to 16, so the count must divide 16 or be a multiple of it}}
mla.decode @gfx942_12 qk_head_dim = 576, v_head_dim = 512, q_heads = 12, q_len = 1, page_size = 64, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'q_heads' (24) cannot be padded on gfx950: decode there pads q heads to 16, so the count must divide 16 or be a multiple of it}}
mla.decode @gfx950_24 qk_head_dim = 576, v_head_dim = 512, q_heads = 24, q_len = 1, page_size = 64, arch = gfx950, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'q_heads' (3) cannot be padded on gfx90a}}
mla.decode @gfx90a_3 qk_head_dim = 576, v_head_dim = 512, q_heads = 3, q_len = 1, page_size = 64, arch = gfx90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// A pinned tile_k is kept; the stages give way instead.
// CHECK-LABEL: mla.decode @pinned
//  CHECK-SAME:   tile_k = 128, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 128, warps = 4, wave_size = 32, stages = 1>,
mla.decode @pinned qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tile_k = 128, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// Then rows per block, with the smaller block's warps: 160 keys fit one
// stage beside 16 rows only (217856 bytes; 32 rows need 248832).
// CHECK-LABEL: mla.decode @pinned_fewer_rows
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 16, tile_k = 160, warps = 4, wave_size = 32, stages = 1>,
mla.decode @pinned_fewer_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, tile_k = 160, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// A tiling already in the IR is a decision made: it is kept.
// CHECK-LABEL: mla.decode @tiled
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 32, tile_k = 16, warps = 4, wave_size = 32, stages = 3>,
mla.decode @tiled qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 32, tile_k = 16, warps = 4, wave_size = 32, stages = 3>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op no decode tiling fits gfx942's 65536 bytes of shared memory: the smallest, heads_per_block = 16, tile_k = 256 (pinned), stages = 1, needs 314880}}
mla.decode @pinned_too_large qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tile_k = 256, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op has no 'arch': name one on the variant or run mla-select-tiling{arch=...}}}
mla.decode @no_arch qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// A pinned tile_q shrinks the block (more blocks a request, for batches too
// small to fill the GPU): bf16 q on an fp8 cache, 32 rows a request, in
// 16-row e4m3 blocks.
// CHECK-LABEL: mla.decode @pinned_rows
//  CHECK-SAME:   tile_q = 16, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 12, wave_size = 32, stages = 3>,
mla.decode @pinned_rows qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 2, page_size = 64, tile_q = 16, arch = sm_90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// 128 heads in 32-row blocks on gfx942.
// CHECK-LABEL: mla.decode @pinned_rows_gfx942
//  CHECK-SAME:   tiling = <heads = 128, heads_per_block = 32,
mla.decode @pinned_rows_gfx942 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, tile_q = 32, arch = gfx942, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op 'tile_q' (32) exceeds the 16 q rows a block takes here (q_len x 16 heads, at most 64 on sm_90a)}}
mla.decode @pinned_rows_too_many qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tile_q = 32, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op 'tile_q' 64 with bf16 q on an fp8 cache needs pages of 64 keys on sm_90a; 32 or 16 q rows a block serve the rest}}
mla.decode @pinned_rows_fp8_page_16 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 16, tile_q = 64, arch = sm_90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op 'tile_q' must be 16, 32 or 64 q rows a block, got 48}}
mla.decode @bad_tile_q qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, tile_q = 48, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op 'tiling' heads_per_block (32) must equal the pinned 'tile_q' (16)}}
mla.decode @tiled_against_pin qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, tile_q = 16, arch = sm_90a, tiling = <heads = 128, heads_per_block = 32, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16
