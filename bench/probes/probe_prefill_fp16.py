# A/B probe: the fp16 GQA prefill at head dim 64 (32/8 heads, causal), with
# bf16 at the same shapes as a control; TFLOP/s. $NAME labels the line.
import math, os, sys, torch
sys.path.insert(0, "bench")
from bench_prefill import bench, flops
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))


def fn(lens, dtype, h=32, hkv=8, d=64):
    t = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    kernel = rt.kernel(f"prefill qk={d} v={d} hq={h} hkv={hkv} mask=causal lse=1 "
                       f"q={dtype} kv={dtype} out={dtype} arch=sm_90a")
    total = sum(lens)
    q = torch.randn(total, h, d, device="cuda", dtype=t)
    k = torch.randn(total, hkv, d, device="cuda", dtype=t)
    v = torch.randn(total, hkv, d, device="cuda", dtype=t)
    out = torch.empty(total, h * d, device="cuda", dtype=t)
    lse = torch.empty(h, total, device="cuda", dtype=torch.float32)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device="cuda", dtype=torch.int32)
    return lambda: kernel.prefill(q, k, v, out, cu, cu, max(lens), lse=lse, softmax_scale=1 / math.sqrt(d))


res = []
for label, lens in (("B4S4096", [4096] * 4), ("B8S2048", [2048] * 8), ("ragged", [8192, 4096, 3000, 2048, 1024, 512, 300, 17])):
    for dtype in ("fp16", "bf16"):
        fl = flops(lens, 32, True, 64, 64)
        res.append(f"{dtype} {label} {fl / bench(fn(lens, dtype)) / 1e9:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
