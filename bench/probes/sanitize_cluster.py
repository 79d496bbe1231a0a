# One small decode step of each cluster-merging kernel (H16 bf16, bf16 q and
# fp8 q on an fp8 cache: KINDS bf16, fp8, fp8q), planned so that every request has two chunks (merged inside a
# cluster), then the same step through the reduce. Small enough to run under
# compute-sanitizer: e.g.
#   compute-sanitizer --tool memcheck python3 bench/probes/sanitize_cluster.py
import os, sys, math
sys.path.insert(0, "bench")
import torch
from bench_decode import mlagen_decode
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batch, seq = 4, 1024
# KINDS=bf16 and MERGES=1 (cluster only) or 0 (reduce only) narrow it down.
for kind in os.environ.get("KINDS", "bf16,fp8q").split(","):
    torch.manual_seed(0)
    fp8, fp8_q = kind in ("fp8", "fp8q"), kind == "fp8q"
    step = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8_q)
    kernel = step.plan.kernel
    cells = {n: c.cell_contents for n, c in zip(step.__code__.co_freevars, step.__closure__)}
    q, kv, out, table, lens, lse = (cells[k] for k in ("q", "kv", "out", "table", "lens", "lse"))
    results = []
    for merge in os.environ.get("MERGES", "1,0").split(","):
        os.environ["MLAGEN_CLUSTER_MERGE"] = merge
        # 8 SMs for 4 requests of 1024 keys: two chunks of 512 each.
        plan = mlagen.DecodePlan(kernel, batch, num_sms=8, max_seq_len=seq).update([seq] * batch)
        out.fill_(float("nan"))
        kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                      kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8_q else 1.0)
        torch.cuda.synchronize()
        results.append((plan.groups, plan.slots, out.float().clone(), lse.clone()))
    os.environ.pop("MLAGEN_CLUSTER_MERGE")
    if len(results) < 2:
        print(f"{kind}: groups {results[0][0]}, slots {results[0][1]}", flush=True)
        continue
    (g0, s0, o0, l0), (g1, s1, o1, l1) = results
    print(f"{kind}: groups {g0} / {g1}, slots {s0} / {s1}, max |d out| "
          f"{(o0 - o1).abs().max().item():.2e}, |d lse| {(l0 - l1).abs().max().item():.2e}", flush=True)
