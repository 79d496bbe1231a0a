# fp8 decode with bf16 q against fp8 q (e4m3 operands), next to bf16, H16
# memory-bound shapes and 128 heads. SHAPES: BATCHxHEADS or BATCHxHEADSxQ_LEN;
# TILE_Q pins the q rows a block of every kernel (where it is below the
# compiler's choice); MODES picks some of bf16, f8 (fp8 cache) and f8q; PAGE
# the page size (64).
import os, sys, torch
sys.path.insert(0, "bench")
import bench_decode
from bench_decode import mlagen_decode, bench
import mlagen
bench_decode.PAGE = int(os.environ.get("PAGE", bench_decode.PAGE))
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
shapes = [(64, 16, 1), (128, 16, 1), (32, 16, 1), (128, 128, 1)]
if os.environ.get("SHAPES"):
    shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ["SHAPES"].split(",")]
for batch, heads, *rest in shapes:
    q_len = rest[0] if rest else 1
    t = {}
    modes = (("bf16", False, False), ("f8", True, False), ("f8q", True, True))
    if os.environ.get("ONLY_F8Q"):
        modes = modes[2:]
    if os.environ.get("MODES"):  # e.g. MODES=bf16,f8
        modes = tuple(m for m in modes if m[0] in os.environ["MODES"].split(","))
    for name, fp8, fp8_q in modes:
        t[name] = bench(mlagen_decode(rt, "sm_90a", batch, heads, 4096, fp8, fp8_q, q_len=q_len,
                                      tile_q=int(os.environ.get("TILE_Q", 0)))) * 1e3
    res.append(f"B{batch}H{heads}" + (f"Q{q_len} " if q_len > 1 else " ") + " ".join(
        f"{k} {v:.1f}" + (f" ({t['bf16'] / v:.2f}x)" if "bf16" in t and k != "bf16" else "")
        for k, v in t.items()))
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
