# B64 H16 (and B128) steps planned over fewer SMs than the device has: with
# num_sms = 64 each request of B64 is one whole block (no split, no merge at
# its end) and 68 SMs idle. bf16 and fp8 q, two alternating rounds.
# SMS=64,132 SHAPES=64,128 python3 bench/probes/probe_plan_sms.py
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
sms = [int(x) for x in os.environ.get("SMS", "64,96,132").split(",")]
batches = [int(x) for x in os.environ.get("SHAPES", "64").split(",")]
for rnd in range(2):
    for b in batches:
        for fp8 in (False, True):
            row = []
            for n in sms:
                step = mlagen_decode(rt, "sm_90a", b, 16, 4096, fp8, fp8, num_sms=n)
                row.append(f"{n} SMs {bench(step) * 1e3:.1f} (work {step.plan.num_work}, slots {step.plan.slots}, groups {step.plan.groups})")
            print(f"round {rnd} B{b} {'fp8 q+kv' if fp8 else 'bf16'}: " + " | ".join(row), flush=True)
