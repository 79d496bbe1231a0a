# Decode + reduce steps (few long requests, H16 bf16) as one graph launch
# (MLAGEN_LAUNCH_GRAPHS=1, default) or two launches (=0): back to back behind
# a small GEMM, where the decode's early start hides its launch under the
# GEMM's tail, and the Python call's host time. $NAME labels the line.
import os, sys, time, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
arch = mlagen.default_arch()
res = []
x = torch.randn(128, 7168, device="cuda", dtype=torch.bfloat16)
w = torch.randn(7168, 1536, device="cuda", dtype=torch.bfloat16)
for batch, heads, seq in ((1, 16, 32768), (4, 16, 16384), (32, 16, 4096), (4, 128, 8192)):
    step = mlagen_decode(rt, arch, batch, heads, seq)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        x @ w; step()
    torch.cuda.synchronize()
    start.record()
    for _ in range(200):
        x @ w; step()
    end.record(); torch.cuda.synchronize()
    loop = start.elapsed_time(end) * 1e3 / 200
    # The Python call alone: host time of 200 calls enqueued without a sync.
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        step()
    host = (time.perf_counter() - t) * 1e6 / 200
    torch.cuda.synchronize()
    res.append(f"B{batch}H{heads}S{seq} gemm+step {loop:.1f} / python call {host:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
