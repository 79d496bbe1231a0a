# A/B probe: the fp16 GQA prefill at head dim 64 (32/8 heads, causal), with
# bf16 at the same shapes as a control; TFLOP/s. $NAME labels the line.
import os, sys
sys.path.insert(0, "bench")
from bench_prefill import bench, flops, mlagen_fn
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for label, lens in (("B4S4096", [4096] * 4), ("B8S2048", [2048] * 8), ("ragged", [8192, 4096, 3000, 2048, 1024, 512, 300, 17])):
    for dtype in ("fp16", "bf16"):
        fl = flops(lens, 32, True, 64, 64)
        res.append(f"{dtype} {label} {fl / bench(mlagen_fn(rt, 'sm_90a', lens, 32, True, 64, 64, 8, dtype=dtype)) / 1e9:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
