# One decode step shape, launched a few times: a target for ncu
# (`ncu -k regex:mlagen_decode$ --launch-skip 3 --launch-count 1 ...`).
# Usage: probe_one.py BATCH HEADS [fp8|fp8q]  (fp8q: fp8 q and cache)
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
batch, heads = int(sys.argv[1]), int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "bf16"
fp8 = mode in ("fp8", "fp8q")
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
step = mlagen_decode(rt, "sm_90a", batch, heads, 4096, fp8, mode == "fp8q")
for _ in range(5):
    step()
torch.cuda.synchronize()
print("ran", batch, heads, mode)
