# Split requests merged inside a thread-block cluster against the plan
# without clusters (MLAGEN_CLUSTER_MERGE=0: a request of two chunks merges
# in the decode grid, more go through the reduce kernel; "reduce" below), in
# one process on one GPU: each shape is planned twice and timed
# alternately; the outputs of the two must agree. SHAPES=BxSxKIND,... picks
# the shapes. H16, bf16, fp8 cache (bf16 q) or fp8 q and cache, page 64.
import os, sys, math
sys.path.insert(0, "bench")
import torch
from bench_decode import mlagen_decode, bench
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
shapes = ((64, 4096, "bf16"), (64, 1024, "bf16"), (48, 8192, "bf16"), (128, 4096, "bf16"),
          (64, 4096, "fp8"), (64, 4096, "fp8q"), (64, 1024, "fp8q"), (128, 4096, "fp8q"))
if os.environ.get("SHAPES"):  # BATCHxSEQxKIND,...
    shapes = tuple((int(b), int(s), k) for b, s, k in (x.split("x") for x in os.environ["SHAPES"].split(",")))
for batch, seq, kind in shapes:
    torch.manual_seed(0)
    fp8, fp8_q = kind != "bf16", kind == "fp8q"
    step = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8_q)
    kernel, cluster_plan = step.plan.kernel, step.plan
    os.environ["MLAGEN_CLUSTER_MERGE"] = "0"
    reduce_plan = mlagen.DecodePlan(kernel, batch, max_seq_len=seq).update([seq] * batch)
    del os.environ["MLAGEN_CLUSTER_MERGE"]
    cells = {n: c.cell_contents for n, c in zip(step.__code__.co_freevars, step.__closure__)}
    q, kv, out, table, lens, lse = (cells[k] for k in ("q", "kv", "out", "table", "lens", "lse"))

    def run(plan):
        return lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                     kv_scale=1 / 16 if fp8 else 1.0,
                                     q_scale=1 / 32 if fp8_q else 1.0)

    plans = (("cluster", cluster_plan), ("reduce", reduce_plan))
    results = {}
    for name, plan in plans:
        out.fill_(float("nan"))
        run(plan)()
        torch.cuda.synchronize()
        results[name] = (out.clone().float(), lse.clone())
    dout = (results["cluster"][0] - results["reduce"][0]).abs().max().item()
    dlse = (results["cluster"][1] - results["reduce"][1]).abs().max().item()
    times = {name: [] for name, _ in plans}
    for _ in range(3):
        for name, plan in plans:
            times[name].append(bench(run(plan)) * 1e3)
    print(f"B{batch} S{seq} {kind}: slots {cluster_plan.slots} / {reduce_plan.slots}; "
          + "; ".join(f"{n} {' '.join(f'{t:.1f}' for t in times[n])} us" for n, _ in plans)
          + f"; max |d out| {dout:.2e}, |d lse| {dlse:.2e}", flush=True)
