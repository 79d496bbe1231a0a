# Does do_bench's L2 flush (zero_ of 256 MB: L2 left full of dirty lines)
# charge a write-back to the timed kernel? Times each op after a writing
# flush, after a reading flush (L2 left clean) and with no flush.
import os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "bench")
from bench_decode import flushed_us, mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
q = torch.randn(64, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(64, 8, 4096, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
def cudnn():
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
ops = {"cudnn B64 GQA": (cudnn, 2 * k.numel() * 2)}
for batch in (64, 128):
    for fp8 in (False, True):
        ops[f"mlagen B{batch}{' fp8' if fp8 else ''}"] = (mlagen_decode(rt, "sm_90a", batch, 16, 4096, fp8), batch * 4096 * 576 * (1 if fp8 else 2))
for r in range(2):
    for name, (fn, nbytes) in ops.items():
        out = []
        for flush in ("write", "read", "none"):
            us = flushed_us(fn, flush)
            out.append(f"{flush} {us:.1f}us {nbytes/us/1e3:.0f}GB/s")
        print(name, " | ".join(out), flush=True)
