# Decode steps whose plan splits nothing, timed as planned (no reduce
# launch) and with the plan's slot count hidden (plan.slots = -1: the
# reduce runs and merges nothing), alternately; B64 splits (unchanged).
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
for batch, heads in ((128, 16), (256, 16), (128, 128), (64, 16)):
    step = mlagen_decode(rt, "sm_90a", batch, heads, 4096)
    slots = step.plan.slots
    times = {}
    for round in range(2):
        for hidden in (False, True):
            step.plan.slots = -1 if hidden else slots
            times.setdefault(hidden, []).append(bench(step) * 1e3)
    print(f"B{batch} H{heads} plan slots {slots}: as planned "
          + " / ".join(f"{t:.1f}" for t in times[False]) + " us, reduce forced "
          + " / ".join(f"{t:.1f}" for t in times[True]) + " us", flush=True)
