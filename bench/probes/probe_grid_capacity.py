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
import math, os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
seq = int(os.environ.get("SEQ", 4096))
big = int(os.environ.get("MAX_BATCH", 256))
heads = int(os.environ.get("HEADS", 16))
res = []
for batch in [int(b) for b in os.environ.get("BATCHES", "1,4,16,64").split(",")]:
    cells = []
    for fp8 in (False, True):
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
        times = []
        for max_batch, max_seq in ((batch, seq), (big, 0)):
            plan = mlagen.DecodePlan(kernel, max_batch, max_seq_len=max_seq).update([seq] * batch)
            items = plan.num_work
            torch.cuda.synchronize()
            step = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                         kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8 else 1.0)
            if max_batch == batch:
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
