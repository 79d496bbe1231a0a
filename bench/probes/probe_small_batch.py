# Small decode steps (H16, S4096 unless SEQ, page 64) against cuDNN's GQA
# decode moving as many cache bytes (32/8 heads, d128), in us as bench()
# times them, and each step's kernels under the torch profiler (median
# durations, and the gaps after each). BATCHES=1,2,4,... picks the batches.
import os, sys, math, statistics, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench, QK
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
seq = int(os.environ.get("SEQ", 4096))
batches = [int(b) for b in os.environ.get("BATCHES", "1,2,4,8,16,32").split(",")]


def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
    dur, gap = {}, {}
    for a, b in zip(ev, ev[1:] + [None]):
        dur.setdefault(a.name[:24], []).append(a.time_range.end - a.time_range.start)
        if b is not None:
            gap.setdefault(a.name[:24], []).append(b.time_range.start - a.time_range.end)
    med = statistics.median
    return " ".join(f"{k} {med(v):.1f} (then {med(gap[k]):.1f})" if k in gap else f"{k} {med(v):.1f}"
                    for k, v in dur.items())


for batch in batches:
    t = {}
    steps = {"bf16": mlagen_decode(rt, "sm_90a", batch, 16, seq),
             "f8q": mlagen_decode(rt, "sm_90a", batch, 16, seq, True, True)}
    kseq = seq * QK * 2 // 4096  # cuDNN's tokens of 8 x 128 K and V for the same bytes
    q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, 8, kseq, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)

    def cudnn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    steps["cudnn"] = cudnn
    for name, fn in steps.items():
        t[name] = bench(fn) * 1e3
    print(f"B{batch} S{seq}: " + " ".join(f"{n} {u:.1f}" for n, u in t.items()) +
          f" | bf16 / cuDNN same bytes {t['cudnn'] / t['bf16']:.2f}x", flush=True)
    for name in ("bf16", "cudnn"):
        print(f"  {name}: {kernels(steps[name])}", flush=True)
