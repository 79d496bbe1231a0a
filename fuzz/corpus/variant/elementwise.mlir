mla.merge_attn_states @merge head_dim = 128, heads = 16, out_lse, out_type = bf16
mla.expand_page_indices @pages page_size = 48, arch = gfx942
mla.kv_cache_write @write latent_dim = 512, rope_dim = 64, page_size = 64, kv_type = f16
mla.reshape_and_cache @gqa kv_heads = 8, head_dim = 128, page_size = 16, in_type = bf16, kv_type = f8E4M3
mla.gather_cache @gather kv_heads = 8, head_dim = 128, page_size = 16, kv_type = f8E4M3, out_type = bf16
