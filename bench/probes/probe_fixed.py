# Where the fixed cost of an H16 decode step goes: eager vs CUDA-graph timing,
# kernel durations and gaps (torch profiler), and a step of 64 keys a request.
# usage: probe_fixed.py [BATCHxSEQ ...]
import os, sys, torch
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
# Shapes as BATCHxSEQ arguments (default: the H16 steps below).
shapes = [tuple(map(int, a.split("x"))) for a in sys.argv[1:]] or \
    [(32, 4096), (64, 4096), (128, 4096), (64, 64), (64, 1024)]
for batch, seq in shapes:
    fn = mlagen_decode(rt, "sm_90a", batch, 16, seq, False)
    t_eager = bench(fn)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        with torch.cuda.graph(g, stream=s):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    t_graph = bench(g.replay)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20): fn()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
    ev.sort(key=lambda e: e.time_range.start)
    dur = {}
    gaps = []
    for a, b in zip(ev, ev[1:]):
        dur.setdefault(a.name[:22], []).append(a.time_range.end - a.time_range.start)
        gaps.append((a.name[:10], b.time_range.start - a.time_range.end))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    d = " ".join(f"{k}={med(v):.1f}" for k, v in dur.items())
    gd = {}
    for k, v in gaps: gd.setdefault(k, []).append(v)
    gs = " ".join(f"after {k}: {med(v):.1f}" for k, v in gd.items())
    print(f"B{batch} S{seq}: eager {t_eager*1e3:.1f} us, graph {t_graph*1e3:.1f} us | {d} | gaps {gs}", flush=True)
