module {
mla.prefill @bidirectional_window qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = 64, right = 64>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
}
