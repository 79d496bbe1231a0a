# Decode + reduce steps (few long requests) as one graph launch or two
# launches (MLAGEN_LAUNCH_GRAPHS=0): back to back behind a small GEMM, and
# 200 Python calls enqueued with no sync (which wait for the device once the
# queue fills; probe_py_call.py times a call alone). $NAME labels the line.
import os, sys, time, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, behind_gemm_us
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, heads, seq in ((1, 16, 32768), (4, 16, 16384), (32, 16, 4096), (4, 128, 8192)):
    step = mlagen_decode(rt, mlagen.default_arch(), batch, heads, seq)
    loop = behind_gemm_us(step)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        step()
    host = (time.perf_counter() - t) * 1e6 / 200
    torch.cuda.synchronize()
    res.append(f"B{batch}H{heads}S{seq} gemm+step {loop:.1f} / python call {host:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
