# fp8 decode with bf16 q against fp8 q (e4m3 operands), next to bf16, H16
# memory-bound shapes and 128 heads.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
shapes = [(64, 16), (128, 16), (32, 16), (128, 128)]
if os.environ.get("SHAPES"):
    shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ["SHAPES"].split(",")]
for batch, heads in shapes:
    t = {}
    modes = (("bf16", False, False), ("f8", True, False), ("f8q", True, True))
    if os.environ.get("ONLY_F8Q"):
        modes = modes[2:]
    for name, fp8, fp8_q in modes:
        t[name] = bench(mlagen_decode(rt, "sm_90a", batch, heads, 4096, fp8, fp8_q)) * 1e3
    res.append(f"B{batch}H{heads} " + " ".join(
        f"{k} {v:.1f}" + (f" ({t['bf16'] / v:.2f}x)" if "bf16" in t and k != "bf16" else "")
        for k, v in t.items()))
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
