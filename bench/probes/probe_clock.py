# SM clock and board power while one step runs back to back for ~3 s
# (nvidia-smi sampled every 20 ms, the last three quarters' medians): the
# H200's 700 W cap sets the clock of every decode kernel run this way.
# NAME=gemm: an 8192^3 bf16 torch GEMM instead. Otherwise SHAPES=BxHxF,...
# (F: 0 bf16, 1 fp8 cache with bf16 q, 2 fp8 q and cache; S 4096, page 64).
import os, subprocess, sys, time, torch, statistics
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
name = os.environ.get("NAME", "?")
def sample(fn, secs=3.0):
    for _ in range(20): fn()
    torch.cuda.synchronize()
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20"], stdout=subprocess.PIPE, text=True)
    t0 = time.time(); n = 0
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
    a.record()
    while time.time() - t0 < secs:
        for _ in range(50): fn()
        n += 50
        torch.cuda.synchronize()
    b.record(); torch.cuda.synchronize()
    p.terminate(); out = p.communicate()[0]
    rows = [tuple(float(x) for x in l.split(",")) for l in out.strip().splitlines() if l.strip()]
    rows = rows[len(rows) // 4:]  # steady part
    clk = statistics.median(r[0] for r in rows); pw = statistics.median(r[1] for r in rows)
    return a.elapsed_time(b) * 1e3 / n, clk, pw
if name == "gemm":
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    us, clk, pw = sample(lambda: x @ x)
    print(f"gemm 8192^3: {2*8192**3/us/1e6:.0f} TF, SM clock {clk:.0f} MHz, power {pw:.0f} W", flush=True)
else:
    for spec in os.environ.get("SHAPES", "128x128x0").split(","):
        b, h, f8 = (int(x) for x in spec.split("x"))
        fn = mlagen_decode(rt, "sm_90a", b, h, 4096, f8 > 0, f8 > 1)
        us, clk, pw = sample(fn)
        gb = b * 4096 * 576 * (1 if f8 else 2) / us / 1e3
        print(f"{name} B{b} H{h} {['bf16','fp8 kv','fp8 q+kv'][f8]}: {us:.1f} us ({2*b*h*4096*1088/us/1e6:.0f} TF, {gb:.0f} GB/s), SM clock {clk:.0f} MHz, power {pw:.0f} W", flush=True)
