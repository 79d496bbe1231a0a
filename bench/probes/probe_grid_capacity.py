# What a decode plan sized for a large max_batch costs a small step: blocks
# past the step's items only read their item and exit. H16 page 64 S4096
# (SEQ), bf16 / fp8 q + cache; each step planned with max_batch = its batch
# (max_seq_len = SEQ, as bench_decode does: "sized"), then with max_batch =
# MAX_BATCH (256) and max_seq_len unbounded, as an engine's buffers are, and
# launched three ways: with the plan's item count (plan_work, as
# kernel.decode passes it: "items"), without it (plan_work -1: "unknown"),
# and as the replay of a CUDA graph captured with the same plan ("graph").
# Since the fifty-fifth stop the last two take the most items a plan of the
# batch holds (batch + DecodePlanner::workSlack), earlier libraries the work
# list's capacity. Prints us (items / work capacity) per plan; $NAME labels
# the line.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import bench, mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
seq = int(os.environ.get("SEQ", 4096))
big = int(os.environ.get("MAX_BATCH", 256))
heads = int(os.environ.get("HEADS", 16))
res = []
for batch in [int(b) for b in os.environ.get("BATCHES", "1,4,16,64").split(",")]:
    cells = []
    for fp8 in (False, True):
        times = []
        for max_batch in (None, big):
            step = mlagen_decode(rt, "sm_90a", batch, heads, seq, fp8, fp8, max_batch=max_batch)
            plan = step.plan
            items = plan.num_work
            if max_batch is None:
                times.append(f"sized {bench(step) * 1e3:.1f}")
                continue
            times.append(f"items {bench(step) * 1e3:.1f}")
            plan.num_work = -1
            times.append(f"unknown {bench(step) * 1e3:.1f}")
            step()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            times.append(f"graph {bench(graph.replay) * 1e3:.1f} ({items}/{plan.work_capacity})")
        cells.append(f"{'fp8' if fp8 else 'bf16'} " + " ".join(times))
    res.append(f"B{batch}: " + ", ".join(cells))
print(os.environ.get("NAME", "?"), f"H{heads} S{seq}", " | ".join(res), flush=True)
