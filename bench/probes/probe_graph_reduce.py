# Why a CUDA graph's replay of a decode step can be slower than the eager
# step (fifty-fifth stop: B64/B128 H128 S4096, 9-23 us): the same plan (max_batch
# MAX_BATCH, 256) launched eagerly as planned (a plan that splits nothing
# skips the reduce), eagerly with the reduce forced (plan.slots = -1, as a
# captured step keeps it), and as a graph replay. Run with and without
# MLAGEN_EARLY_START=0 (no programmatic dependent launch). HEADS (128),
# BATCHES (64,128), SEQ (4096), MODES bf16 / fp8 (q + cache). Prints us per
# launch; $NAME labels the line.
import math, os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
seq = int(os.environ.get("SEQ", 4096))
big = int(os.environ.get("MAX_BATCH", 256))
heads = int(os.environ.get("HEADS", 128))
res = []
for batch in [int(b) for b in os.environ.get("BATCHES", "64,128").split(",")]:
    for mode in os.environ.get("MODES", "bf16").split(","):
        fp8 = mode == "fp8"
        kernel = rt.kernel(f"decode qk=576 v=512 hq={heads} q_len=1 page=64 mask=causal lse=1 "
                           f"q={'fp8e4m3' if fp8 else 'bf16'} kv={'fp8e4m3' if fp8 else 'bf16'} "
                           f"out=bf16 arch=sm_90a")
        pages = seq // 64
        q = torch.randn(batch, 1, heads, 576, device="cuda", dtype=torch.bfloat16)
        kv = torch.randn(batch * pages, 64, 576, device="cuda", dtype=torch.bfloat16)
        if fp8:
            q, kv = (q * 32).to(torch.float8_e4m3fn), (kv * 16).to(torch.float8_e4m3fn)
        table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
        lens = torch.full((batch,), seq, device="cuda", dtype=torch.int32)
        out = torch.empty(batch, 1, heads, 512, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(batch, 1, heads, device="cuda", dtype=torch.float32)
        plan = mlagen.DecodePlan(kernel, big).update([seq] * batch)
        slots = plan.slots
        step = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                     kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8 else 1.0)
        torch.cuda.synchronize()
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
