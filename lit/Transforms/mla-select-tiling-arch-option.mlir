// RUN: mlagen-opt %s --mla-select-tiling=arch=gfx942 | FileCheck %s
// RUN: not mlagen-opt %s --mla-select-tiling=arch=sm_70 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// The option is the target of variants that name none.
// CHECK-LABEL: mla.prefill @from_option
//  CHECK-SAME:   arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64,
mla.prefill @from_option qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// A variant's own arch wins.
// CHECK-LABEL: mla.prefill @own_arch
//  CHECK-SAME:   arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32,
mla.prefill @own_arch qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// UNKNOWN: error: mla-select-tiling: unknown arch 'sm_70', expected one of gfx90a, gfx942, gfx950, sm_80, sm_90a

// Decode variants take the option too, and AMD pads their heads.
// CHECK-LABEL: mla.decode @decode_from_option
//  CHECK-SAME:   arch = gfx942, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>,
mla.decode @decode_from_option qk_head_dim = 576, v_head_dim = 512, q_heads = 4, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16
