# Host time of a Python kernel.decode call (decode + reduce, B4 H16 S16384,
# and a one-launch step, B64 H16 S4096): each call timed alone after a
# sync (the queue empty, so no call waits for the device), median of 500;
# beside it the ctypes call with the arguments the binding passed, and
# torch's stream lookups. us a call.
import os, sys, time, statistics, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))

def alone(fn, n=500):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6

res = {"current_stream()": alone(lambda: torch.cuda.current_stream().cuda_stream)}
for batch, seq in ((4, 16384), (64, 4096)):
    step = mlagen_decode(rt, mlagen.default_arch(), batch, 16, seq)
    step(); torch.cuda.synchronize()
    real = mlagen._lib.mlagen_decode_run_checked
    seen = []
    class Spy:
        def __getattr__(self, name):
            fn = getattr(real_lib, name)
            if name == "mlagen_decode_run_checked":
                return lambda *a: (seen.append(a), fn(*a))[1]
            return fn
    real_lib = mlagen._lib
    mlagen._lib = Spy()
    step()
    mlagen._lib = real_lib
    args = seen[0]
    res[f"B{batch} call"] = alone(step)
    res[f"B{batch} ctypes only"] = alone(lambda: real(*args))
print(" | ".join(f"{k} {v:.2f}" for k, v in res.items()), flush=True)
