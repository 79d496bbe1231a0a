# One-launch decodes as one-node graphs (MLAGEN_LAUNCH_GRAPHS=all) or
# direct launches with early start (default): device time under do_bench's
# flush, and back to back behind a small GEMM (a layer's q projection), where
# early start hides the decode's launch under the GEMM's tail. $NAME labels
# the line.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
arch = mlagen.default_arch()
res = []
x = torch.randn(128, 7168, device="cuda", dtype=torch.bfloat16)
w = torch.randn(7168, 1536, device="cuda", dtype=torch.bfloat16)
for batch, heads, seq in ((64, 16, 4096), (128, 16, 4096), (128, 128, 4096), (8, 16, 1024), (32, 128, 1024)):
    step = mlagen_decode(rt, arch, batch, heads, seq)
    us = bench(step) * 1e3
    for _ in range(20):
        x @ w; step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(200):
        x @ w; step()
    end.record(); torch.cuda.synchronize()
    res.append(f"B{batch}H{heads}S{seq} {us:.1f} / gemm+step {start.elapsed_time(end) * 1e3 / 200:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
