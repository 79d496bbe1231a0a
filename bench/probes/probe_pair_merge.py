# Requests split in two chunks (B64 H16, S 512-8192) as the planner merges
# them, bf16 and fp8 q: with `ab.sh`, libraries whose planners pick the
# cluster or the grid merge differently. SEQS=512,1024,... BATCH=64.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batch = int(os.environ.get("BATCH", "64"))
res = []
for seq in (int(s) for s in os.environ.get("SEQS", "512,1024,1536,2048,3072,4096").split(",")):
    for name, fp8 in (("bf16", False), ("f8q", True)):
        step = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8)
        res.append(f"S{seq} {name} {bench(step) * 1e3:.1f} (g{step.plan.groups})")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
