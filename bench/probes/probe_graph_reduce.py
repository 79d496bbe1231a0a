# Why a CUDA graph's replay of a decode step can be slower than the eager
# step (fifty-fifth stop: B64/B128 H128 S4096, 9-14 us): the same plan (max_batch
# MAX_BATCH, 256) launched eagerly as planned (a plan that splits nothing
# skips the reduce), eagerly with the reduce forced (plan.slots = -1, as a
# captured step keeps it), and as a graph replay. Run with and without
# MLAGEN_EARLY_START=0 (no programmatic dependent launch). HEADS (128),
# BATCHES (64,128), SEQ (4096), MODES bf16 / fp8 (q + cache). Prints us per
# launch; $NAME labels the line.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import bench, mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
seq = int(os.environ.get("SEQ", 4096))
big = int(os.environ.get("MAX_BATCH", 256))
heads = int(os.environ.get("HEADS", 128))
res = []
for batch in [int(b) for b in os.environ.get("BATCHES", "64,128").split(",")]:
    for mode in os.environ.get("MODES", "bf16").split(","):
        fp8 = mode == "fp8"
        step = mlagen_decode(rt, "sm_90a", batch, heads, seq, fp8, fp8, max_batch=big)
        plan = step.plan
        slots = plan.slots
        eager = bench(step) * 1e3
        plan.slots = -1
        forced = bench(step) * 1e3
        step()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        replay = bench(graph.replay) * 1e3
        res.append(f"B{batch} {mode}: eager {eager:.1f} (slots {slots}), reduce forced {forced:.1f}, "
                   f"graph {replay:.1f}")
print(os.environ.get("NAME", "?"), f"H{heads} S{seq}", "early start",
      os.environ.get("MLAGEN_EARLY_START", "on"), " | ".join(res), flush=True)
