# A/B probe: mlagen prefill (lib from MLAGEN_LIBRARY) and cuDNN on several causal shapes.
import math, os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from bench_prefill import bench, flops, mlagen_fn
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
name = os.environ.get("NAME", "?")
cud = "--cudnn" in sys.argv
shapes = [("B4H16S4096", [4096]*4, 16, 16, 192, 128), ("B1H128S8192", [8192], 128, 128, 192, 128),
          ("ragged", [8192, 4096, 3000, 2048, 1024, 512, 300, 17], 16, 16, 192, 128),
          ("B1H16S4096", [4096], 16, 16, 192, 128), ("B2H16S8192", [8192]*2, 16, 16, 192, 128),
          ("B8H16S2048", [2048]*8, 16, 16, 192, 128),
          ("B16H16S1024", [1024]*16, 16, 16, 192, 128), ("B32H16S512", [512]*32, 16, 16, 192, 128),
          ("Llama B4S4096", [4096]*4, 32, 8, 128, 128)]
out = []
for label, lens, h, hkv, dqk, dv in shapes:
    fl = flops(lens, h, True, dqk, dv)
    t = fl / bench(mlagen_fn(rt, "sm_90a", lens, h, True, dqk, dv, hkv)) / 1e9
    s = f"{label} {t:.1f}"
    if cud and len(set(lens)) == 1:
        b, n = len(lens), lens[0]
        q = torch.randn(b, h, n, dqk, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, h, n, dqk, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, h, n, dv, device="cuda", dtype=torch.bfloat16)
        def f():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
        c = fl / bench(f) / 1e9
        s += f" (cudnn {c:.1f}, {t/c:.3f})"
    out.append(s)
    torch.cuda.empty_cache()
print(name, " | ".join(out))
