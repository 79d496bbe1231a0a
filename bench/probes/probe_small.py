# Small decode steps, where the plan's shortest chunk (DecodePlanOptions::
# minChunkKeys) sets how many blocks stream: MLA H16 (bf16 / fp8 q on an
# fp8 cache), MLA H128 (bf16) and paged GQA (Llama-3-8B heads, page 16,
# bf16), page 64 for MLA; each shape's us, and the blocks of the MLA plans
# (bf16 / fp8). SHORT=1: short requests instead (MLA H16 only, then the
# same H128 and GQA steps). Quick A/B: $NAME labels the line.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import bench_paged_decode as bpd
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
shapes = ((1, 4096), (1, 8192), (2, 4096), (4, 4096), (8, 4096), (1, 1024))
if os.environ.get("SHORT"):  # short requests: where a split pays its merge
    shapes = ((1, 512), (2, 512), (4, 512), (1, 256), (1, 640), (16, 1024), (32, 512))
for batch, seq in shapes:
    t, blocks = [], []
    for fp8 in (False, True):
        step = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8)
        t.append(f"{bench(step) * 1e3:.1f}")
        blocks.append(str(step.plan.num_work))
    res.append(f"B{batch} S{seq} {'/'.join(t)}us ({'/'.join(blocks)} blocks)")
for batch in (1, 2, 4):
    step = mlagen_decode(rt, "sm_90a", batch, 128, 4096)
    res.append(f"H128 B{batch} {bench(step) * 1e3:.1f}us ({step.plan.num_work} blocks)")
bpd.SEQ = 4096
for batch in (1, 2, 4):
    res.append(f"GQA B{batch} {bpd.bench(bpd.mlagen_paged(rt, 'sm_90a', batch, 16, False)) * 1e3:.1f}us")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
