# Where a decode step's time goes, block by block: a build with
# bench/probes/stamps.patch applied records %globaltimer per block (entry,
# after the grid-dependency wait, after its work item, first and last tile
# arrived, output written) and per reduce block (start, end) in the tail of
# the plan's partial_out. Each run follows do_bench's writing flush.
# Also cuDNN's GQA decode against S (its fixed part, for comparison).
# Build: git apply bench/probes/stamps.patch, build, copy libmlagen.so to
# carry/alt/stamps/, git checkout templates; run with MLAGEN_LIBRARY at it
# (H16 shapes only: the stamps live past the partials of <= 146 slots).
# SHAPES=BxS,... (default 128x4096,128x1024,64x4096,64x1024), CUDNN=64,16.
import json, os, statistics, sys
import torch
sys.path.insert(0, "bench")
from bench_decode import cudnn_gqa_decode_GBps, mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
# Where stamps.patch writes, in floats of partial_out: 16 int64 a decode
# block (up to 500 blocks), then 2 a reduce block (up to 2048).
BASE = 1200000
BLOCKS = BASE + 2 * 8000
END = BLOCKS + 2 * 2048
DUMP = {}
def q(v):
    v = sorted(v)
    return f"{v[0]:6.1f} {v[len(v) // 2]:6.1f} {v[-1]:6.1f}"
def run(batch, seq, fp8, runs=7):
    fn = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8)
    po = fn.plan.partial_out
    for _ in range(5): fn()
    res = []
    for _ in range(runs):
        po[BASE:END].zero_()
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        st = po[BASE:BLOCKS].view(torch.int64).view(-1, 16).cpu()
        rd = po[BLOCKS:END].view(torch.int64).view(-1, 2).cpu()
        res.append((a.elapsed_time(b) * 1e3, st, rd))
    tag = f"B{batch} S{seq} {'f8q' if fp8 else 'bf16'}"
    DUMP[tag] = [{"event_us": e, "blocks": s_.tolist(), "reduce": r_[r_[:, 1] > 0].tolist()} for e, s_, r_ in res]
    # Is a slow block's SM slow in every run? Stream time (tile 0 -> last tile) by SM, run against run.
    by_sm = []
    for _, s_, _ in res:
        l_ = s_[s_[:, 5] > 0]
        by_sm.append({int(r[7]): (r[4] - r[3]).item() / 1e3 for r in l_})
    common = sorted(set.intersection(*[set(d) for d in by_sm]))
    if len(common) > 8:
        xs = torch.tensor([[d[k] for k in common] for d in by_sm])
        c = torch.corrcoef(xs)
        off = c[~torch.eye(len(by_sm), dtype=torch.bool)]
        slow = sorted(common, key=lambda k: -statistics.mean(d[k] for d in by_sm))[:8]
        print(f"  stream time by SM, correlation between runs: mean {off.mean():.2f}; slowest SMs {slow}")
    res.sort(key=lambda r: r[0])
    ev, st, rd = res[len(res) // 2]
    live = st[st[:, 5] > 0]
    t0 = st[st[:, 0] > 0][:, 0].min().item()
    rel = lambda col: [(x - t0) / 1e3 for x in live[:, col].tolist()]
    red = rd[rd[:, 1] > 0]
    print(f"{tag}: event {ev:.1f} us, {len(live)} working blocks; us after the first block's entry (min med max):")
    for i, name in enumerate(("entry", "wait done", "job read", "tile 0 in", "last tile in", "written")):
        print(f"  {name:13s} {q(rel(i))}")
    if len(red):
        print(f"  reduce start  {q([(x - t0) / 1e3 for x in red[:, 0].tolist()])}  end {q([(x - t0) / 1e3 for x in red[:, 1].tolist()])}  ({len(red)} blocks)")
    per = [(e - f) / 1e3 for f, e in zip(live[:, 3].tolist(), live[:, 4].tolist())]
    print(f"  tile 0 -> last tile per block {q(per)}", flush=True)
    pct = lambda a, b: [100 * x / max(y, 1) for x, y in zip(live[:, a].tolist(), live[:, b].tolist())]
    print(f"  % of consumer 0's loop waiting for full stages {q(pct(8, 10))}; producer waiting for empty ones {q(pct(9, 10))}")
    if live[:, 12].sum() > 0:
        print(f"  % of consumer 1's loop waiting for full stages {q(pct(11, 12))}")
for batch, seq in [tuple(map(int, x.split('x'))) for x in os.environ.get('SHAPES', '128x4096,128x1024,64x4096,64x1024').split(',')]:
    for fp8 in (False, True):
        run(batch, seq, fp8)
json.dump(DUMP, open(os.path.join(os.environ.get("OUT", "/tmp"), "stamps.json"), "w"))
for batch in [int(x) for x in os.environ.get('CUDNN', '64,16').split(',') if x]:
    out = []
    for seq in (1024, 2048, 4096, 8192):
        mb = 2 * batch * 8 * seq * 128 * 2 / 1e6  # K and V, 8 heads of 128
        us = mb / cudnn_gqa_decode_GBps(batch, seq) * 1e3
        out.append(f"S{seq} {us:.1f} us ({mb:.0f} MB)")
    print(f"cuDNN GQA B{batch}:", " | ".join(out), flush=True)
