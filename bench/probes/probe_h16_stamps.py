# Where a 16-row decode step's time goes (B64 / B128 H16, bf16 and fp8 q): a
# library built with bench/probes/h16-stamps.patch records %globaltimer per
# block in partial_out from float 4M on ([block][16] int64: 0 entry, 1 SM,
# 2 q ready, 3 first tile ready, 4 consumer 0's loop end, 5 O staged, 6 the
# cluster partner started, 7 its copy arrived, 8 rows written, 10 keys,
# 11 merge parts * 8 + rank, 12 exit). Each run follows do_bench's writing
# flush. Prints, per step, medians over runs of the per-block medians, and
# the phases of the block that exits last.
import json, os, statistics, sys
import torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
BASE = 4 << 20
NBLK = 1024
OUT = os.environ.get("OUT", ".")
med = statistics.median
dump = {}
shapes = [(64, False), (64, True), (128, False), (128, True)]
for batch, fp8 in shapes:
    fn = mlagen_decode(rt, "sm_90a", batch, 16, 4096, fp8, fp8)
    fn.plan.partial_out = torch.zeros(BASE + NBLK * 32, dtype=torch.float32, device="cuda")
    po = fn.plan.partial_out
    for _ in range(3):
        fn()
    runs = []
    for _ in range(9):
        po[BASE:].zero_()
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        st = [r for r in po[BASE:].view(torch.int64).view(-1, 16).cpu().tolist() if r[0] > 0]
        runs.append((a.elapsed_time(b) * 1e3, st))
    keys = ("event", "span", "pro", "first", "loop", "stage", "cwait", "recv", "write", "exit", "loop_end_spread")
    rows, last = [], []
    for ev, st in runs:
        t0 = min(r[0] for r in st)
        d = lambda r, i, j: (r[j] - r[i]) / 1e3 if r[i] > 0 and r[j] > 0 else None
        def m(i, j):
            v = [x for x in (d(r, i, j) for r in st) if x is not None]
            return med(v) if v else 0.0
        ends = [r[4] for r in st if r[4] > 0]
        rows.append((ev, (max(r[12] for r in st) - t0) / 1e3, m(0, 2), m(2, 3), m(3, 4), m(4, 5), m(5, 6), m(6, 7),
                     m(7 if st[0][7] > 0 else 5, 8), m(8, 12), (max(ends) - min(ends)) / 1e3))
        lb = max(st, key=lambda r: r[12])
        last.append([((lb[i] - t0) / 1e3 if lb[i] > 0 else -1) for i in (0, 2, 3, 4, 5, 6, 7, 8, 12)] + [lb[10], lb[11]])
        dump.setdefault(f"B{batch} {'fp8' if fp8 else 'bf16'}", []).append({"event_us": ev, "blocks": st})
    mm = [med(c) for c in zip(*rows)]
    print(f"B{batch} H16 {'fp8 q' if fp8 else 'bf16'}: {len(runs[0][1])} blocks, " +
          ", ".join(f"{k} {v:.2f}" for k, v in zip(keys, mm)), flush=True)
    lm = [med(c) for c in zip(*last)]
    print("  last block (from the first entry): entry %.2f q %.2f first %.2f loop end %.2f staged %.2f "
          "cwait %.2f recv %.2f written %.2f exit %.2f keys %d merge %d" % tuple(lm), flush=True)
json.dump(dump, open(os.path.join(OUT, "h16_stamps.json"), "w"))
