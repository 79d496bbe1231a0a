# A decode step at 128 heads (B64 and B8, S4096, buffers for 256 requests)
# with its reduce forced (plan.slots = -1, as a captured step keeps it),
# three times, for ncu: e.g. MLAGEN_LAUNCH_GRAPHS=0 ncu --metrics
# gpu__time_duration.sum python3 bench/probes/ncu_reduce.py (fifty-fifth
# stop: the B64 reduce that merges nothing takes 9.4 us).
import math, os, sys, torch
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
heads, seq = 128, 4096
for batch in (64, 8):
    kernel = rt.kernel(f"decode qk=576 v=512 hq={heads} q_len=1 page=64 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_90a")
    pages = seq // 64
    q = torch.randn(batch, 1, heads, 576, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(batch * pages, 64, 576, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), seq, device="cuda", dtype=torch.int32)
    out = torch.empty(batch, 1, heads, 512, device="cuda", dtype=torch.bfloat16)
    plan = mlagen.DecodePlan(kernel, 256).update([seq] * batch)
    plan.slots = -1
    for _ in range(3):
        kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192))
    torch.cuda.synchronize()
    print("batch", batch, "work items", plan.num_work, flush=True)
