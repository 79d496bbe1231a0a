# One-launch decodes as one-node graphs (MLAGEN_LAUNCH_GRAPHS=all, an
# experiment of the forty-sixth stop, not in the library) or direct launches
# with early start (default): device time under do_bench's flush, and back
# to back behind a small GEMM. $NAME labels the line.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench, behind_gemm_us
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, heads, seq in ((64, 16, 4096), (128, 16, 4096), (128, 128, 4096), (8, 16, 1024), (32, 128, 1024)):
    step = mlagen_decode(rt, mlagen.default_arch(), batch, heads, seq)
    res.append(f"B{batch}H{heads}S{seq} {bench(step) * 1e3:.1f} / gemm+step {behind_gemm_us(step):.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
