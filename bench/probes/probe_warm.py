# Is the first timing after an idle GPU (JIT compile) low? B4 H16 S4096 prefill, mlagen and cuDNN, repeated.
import os, sys, time, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench
sys.path.insert(0, "bench")
from bench_prefill import flops, mlagen_fn
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
fl = flops([4096] * 4, 16, True, 192, 128)
m = mlagen_fn(rt, "sm_90a", [4096] * 4, 16, True, 192, 128, 16)
q = torch.randn(4, 16, 4096, 192, device="cuda", dtype=torch.bfloat16)
k = torch.randn_like(q); v = torch.randn(4, 16, 4096, 128, device="cuda", dtype=torch.bfloat16)
def c():
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
def tf(fn, w=25): fn(); torch.cuda.synchronize(); return fl / do_bench(fn, warmup=w, rep=200, return_mode="median") / 1e9
for tag in ("after compile", "again", "again"):
    print(tag, "mlagen %.1f cudnn %.1f" % (tf(m), tf(c)), flush=True)
time.sleep(2)
print("after 2 s idle", "mlagen %.1f cudnn %.1f" % (tf(m), tf(c)), flush=True)
time.sleep(2)
print("after 2 s idle, cudnn first", "cudnn %.1f mlagen %.1f" % (tf(c), tf(m)), flush=True)
time.sleep(2)
print("after 2 s idle, warmup 500 ms", "mlagen %.1f cudnn %.1f" % (tf(m, 500), tf(c, 500)), flush=True)
