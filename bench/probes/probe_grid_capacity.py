# What a decode plan sized for a large max_batch costs a small step: blocks
# past the step's items only read their item and exit. H16 page 64 S4096
# (SEQ), bf16 / fp8 q + cache; each step planned three ways: with
# max_batch = its batch (max_seq_len = SEQ, as bench_decode does); with
# max_batch = MAX_BATCH (256) and max_seq_len unbounded, as an engine's
# buffers are, launched with the plan's item count (plan_work: the grid
# covers the plan's items, as kernel.decode does since the fifty-fifth
# stop); and the same plan launched with plan_work -1 (grid x = the work
# list's capacity, as under graph capture). Prints us (items / work
# capacity) per plan;
# $NAME labels the line.
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
        name = "fp8" if fp8 else "bf16"
        for label, max_batch, max_seq, known in (("sized", batch, seq, True),
                                                 (f"max_batch {big}", big, 0, True),
                                                 (f"max_batch {big} grid=capacity", big, 0, False)):
            plan = mlagen.DecodePlan(kernel, max_batch, max_seq_len=max_seq).update([seq] * batch)
            items = plan.num_work
            if not known:
                plan.num_work = -1  # what a launch that does not know the count passes
            torch.cuda.synchronize()
            step = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                         kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8 else 1.0)
            cells.append(f"{name} {label}: {bench(step) * 1e3:.1f} ({items}/{plan.work_capacity})")
    res.append(f"B{batch}: " + ", ".join(cells))
print(os.environ.get("NAME", "?"), f"H{heads} S{seq}", " | ".join(res), flush=True)
