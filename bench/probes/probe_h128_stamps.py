# Where a 128-head decode step's time goes, block by block: a library built
# with bench/probes/h128-stamps.patch records %globaltimer per block (entry,
# Q landed for consumer 0, its loop's end, the row sums' barrier, O staged,
# exit) with its SM and keys, in
# partial_out from float 4M on. Each run follows do_bench's writing flush.
# Prints, per shape, the median over runs of: the step (events), each
# block's prologue (entry -> Q), loop and epilogue (loop end -> exit), the
# gap on an SM between one block's exit and the next one's entry, and the
# share of SM time spent outside the loops.
import json, os, statistics, sys
import torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
BASE = 4 << 20
OUT = os.environ.get("OUT", ".")
dump = {}
med = statistics.median
for batch, seq in ((128, 4096), (64, 4096), (256, 4096), (128, 8192), (32, 4096)):
    fn = mlagen_decode(rt, "sm_90a", batch, 128, seq)
    po = fn.plan.partial_out
    nblk = fn.plan.num_work * 2
    if po.numel() < BASE + nblk * 16:
        print(f"B{batch}: partial_out has {po.numel()} floats, too few for stamps")
        continue
    for _ in range(3):
        fn()
    runs = []
    for _ in range(7):
        po[BASE:BASE + nblk * 16].zero_()
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        st = po[BASE:BASE + nblk * 16].view(torch.int64).view(-1, 8).cpu().tolist()
        runs.append((a.elapsed_time(b) * 1e3, st))
    rows = []
    for ev, st in runs:
        t0 = min(r[0] for r in st if r[0] > 0)
        blocks = [r for r in st if r[0] > 0 and r[4] > 0]
        pro = [(r[2] - r[0]) / 1e3 for r in blocks if r[2] > 0]
        loop = [(r[3] - r[2]) / 1e3 for r in blocks if r[3] > 0]
        epi = [(r[4] - r[3]) / 1e3 for r in blocks if r[3] > 0]
        sums = [(r[6] - r[3]) / 1e3 for r in blocks if r[6] > 0]
        stage = [(r[7] - r[6]) / 1e3 for r in blocks if r[7] > 0]
        write = [(r[4] - r[7]) / 1e3 for r in blocks if r[7] > 0]
        by_sm = {}
        for r in blocks:
            by_sm.setdefault(r[1], []).append(r)
        gaps, outside, span = [], 0.0, 0.0
        for sm, bl in by_sm.items():
            bl.sort(key=lambda r: r[0])
            for x, y in zip(bl, bl[1:]):
                gaps.append((y[0] - x[4]) / 1e3)
            first, last = bl[0][0], bl[-1][4]
            span += (last - t0) / 1e3
            outside += (last - t0) / 1e3 - sum((r[3] - r[2]) / 1e3 for r in bl)
        end = max(r[4] for r in blocks)
        rows.append((ev, (end - t0) / 1e3, med(pro), med(loop), med(epi), med(gaps) if gaps else 0.0,
                     outside / span, len(blocks), len(by_sm), med(sums), med(stage), med(write)))
        dump.setdefault(f"B{batch} S{seq}", []).append({"event_us": ev, "blocks": st})
    m = [med(c) for c in zip(*rows)]
    print(f"B{batch} S{seq}: step {m[0]:.1f} us (stamps {m[1]:.1f}), {m[7]:.0f} blocks on {m[8]:.0f} SMs; "
          f"prologue {m[2]:.2f}, loop {m[3]:.1f}, epilogue {m[4]:.2f} (to the sums' barrier {m[9]:.2f}, "
          f"staging {m[10]:.2f}, writes {m[11]:.2f}), gap between blocks {m[5]:.2f} us; "
          f"outside loops {100 * m[6]:.1f}% of SM time", flush=True)
json.dump(dump, open(os.path.join(OUT, "h128_stamps.json"), "w"))
