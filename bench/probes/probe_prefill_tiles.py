# Causal prefill at several lengths: the default tiling next to pinned tile_q
# values (64 rows: one consumer, two blocks an SM), and cuDNN, in one process.
import math, os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from bench_prefill import bench, flops
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
pins = [int(x) for x in os.environ.get("PINS", "0 64").split()]
shapes = [(32, 16, 16, 512, 192, 128), (16, 16, 16, 1024, 192, 128), (8, 16, 16, 2048, 192, 128),
          (4, 16, 16, 4096, 192, 128), (1, 128, 128, 8192, 192, 128), (8, 32, 8, 2048, 128, 128),
          (4, 32, 8, 4096, 128, 128), (4, 32, 8, 4096, 64, 64)]
for b, h, hkv, s, dqk, dv in shapes:
    fl = flops([s] * b, h, True, dqk, dv)
    q = torch.randn(b * s, h, dqk, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b * s, hkv, dqk, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b * s, hkv, dv, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(b * s, h * dv, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(h, b * s, device="cuda", dtype=torch.float32)
    cu = torch.arange(0, (b + 1) * s, s, device="cuda", dtype=torch.int32)
    res = []
    for pin in pins:
        kern = rt.kernel(f"prefill qk={dqk} v={dv} hq={h} hkv={hkv} mask=causal lse=1 q=bf16 kv=bf16 out=bf16 "
                         f"tile_q={pin} arch=sm_90a")
        fn = lambda: kern.prefill(q, k, v, out, cu, cu, s, lse=lse, softmax_scale=1 / math.sqrt(dqk))
        res.append(f"q{pin} {fl / bench(fn) / 1e9:.1f}")
    qq = q.view(b, s, h, dqk).transpose(1, 2).contiguous()
    kk = k.view(b, s, hkv, dqk).transpose(1, 2).repeat_interleave(h // hkv, 1).contiguous()
    vv = v.view(b, s, hkv, dv).transpose(1, 2).repeat_interleave(h // hkv, 1).contiguous()
    def c():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
    res.append(f"cudnn {fl / bench(c) / 1e9:.1f}")
    print(f"B{b} H{h}/{hkv} S{s} d{dqk}/{dv}:", " | ".join(res), flush=True)
    del q, k, v, out, lse, qq, kk, vv
    torch.cuda.empty_cache()
