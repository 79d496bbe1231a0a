# Host time of Python decode calls: kernel.decode (decode + reduce, B4 H16
# S16384; one launch, B64 H16 S4096) and kernel.paged_decode (Llama-3-8B
# heads, B4 and B64 at S4096, bf16 page 16), each call timed alone after a
# sync (the queue empty, so no call waits for the device), median of 500;
# beside it the ctypes call with the arguments the binding passed, and
# torch's public stream lookup; and kernel.prefill (two requests of 128
# tokens). us a call.
import os, sys, time, statistics, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import bench_paged_decode as bpd
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
arch = mlagen.default_arch()


def alone(fn, n=500):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def ctypes_args(step, entry):
    """The arguments `step` passes to the C function `entry`."""
    real_lib, seen = mlagen._lib, []
    class Spy:
        def __getattr__(self, name):
            fn = getattr(real_lib, name)
            return (lambda *a: (seen.append(a), fn(*a))[1]) if name == entry else fn
    mlagen._lib = Spy()
    try:
        step()
    finally:
        mlagen._lib = real_lib
    return getattr(real_lib, entry), seen[0]


res = {"current_stream()": alone(lambda: torch.cuda.current_stream().cuda_stream)}
bpd.SEQ = 4096
steps = [(f"decode B{b}", mlagen_decode(rt, arch, b, 16, s), "mlagen_decode_run_checked")
         for b, s in ((4, 16384), (64, 4096))]
steps += [(f"paged B{b}", bpd.mlagen_paged(rt, arch, b, 16, False), "mlagen_paged_decode_run")
          for b in (4, 64)]
# kernel.prefill: MLA 192/128, 16 heads, two requests of 128 tokens, with LSE.
pk = rt.kernel(f"prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch={arch}")
T, H = 256, 16
pq, pkk = (torch.randn(T, H, 192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
pv = torch.randn(T, H, 128, device="cuda", dtype=torch.bfloat16)
pout = torch.empty(T, H, 128, device="cuda", dtype=torch.bfloat16)
plse = torch.empty(H, T, device="cuda")
pcu = torch.tensor([0, 128, 256], dtype=torch.int32, device="cuda")
steps.append(("prefill", lambda: pk.prefill(pq, pkk, pv, pout, pcu, pcu, 128, lse=plse),
              "mlagen_prefill_run"))
for label, step, entry in steps:
    step(); torch.cuda.synchronize()
    fn, args = ctypes_args(step, entry)
    res[f"{label} call"] = alone(step)
    res[f"{label} ctypes only"] = alone(lambda: fn(*args))
print(" | ".join(f"{k} {v:.2f}" for k, v in res.items()), flush=True)
