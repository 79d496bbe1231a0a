# The streaming limit under the bench's own timing: torch reading the same
# number of cache bytes (a sum over them) against a decode step, after
# do_bench's writing flush; with the step's kernel durations (profiler, no
# flush) and a step of one 64-key tile a request.
import os, sys, torch
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
def kernel_us(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20): fn()
        torch.cuda.synchronize()
    dur = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            dur.setdefault(e.name[:16], []).append(e.time_range.end - e.time_range.start)
    return " ".join(f"{k} {sorted(v)[len(v) // 2]:.1f}" for k, v in dur.items())
for batch in (128, 64):
    for name, fp8 in (("bf16", False), ("f8q", True)):
        nbytes = batch * 4096 * 576 * (1 if fp8 else 2)
        x = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
        t_read = bench(lambda: x.sum()) * 1e3
        fn = mlagen_decode(rt, "sm_90a", batch, 16, 4096, fp8, fp8)
        t_step = bench(fn) * 1e3
        one = mlagen_decode(rt, "sm_90a", batch, 16, 64, fp8, fp8)
        t_one = bench(one) * 1e3
        print(f"B{batch} {name}: torch sum of {nbytes / 1e6:.0f} MB {t_read:.1f} us "
              f"({nbytes / t_read / 1e3:.0f} GB/s) | step {t_step:.1f} us ({t_read / t_step:.2f}x the read) "
              f"| kernels: {kernel_us(fn)} | S64 step {t_one:.1f} us, kernels: {kernel_us(one)}", flush=True)
        del x
