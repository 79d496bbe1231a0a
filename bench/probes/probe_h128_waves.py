# B128 H128 bf16 planned for different SM counts: the same work in more or
# fewer blocks (each block's start and end are fixed costs an SM pays in
# turn). Prints us, work items and slots per plan.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, sms in ((128, 66), (128, 132), (128, 198), (128, 264), (128, 396), (64, 132), (256, 132), (32, 132)):
    step = mlagen_decode(rt, "sm_90a", batch, 128, 4096, num_sms=sms)
    ms = bench(step)
    res.append(f"B{batch}/{sms}sm {ms*1e3:.1f}us {step.plan.num_work}w {step.plan.slots}s")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
