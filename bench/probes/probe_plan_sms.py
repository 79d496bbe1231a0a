# One decode step planned for fewer SMs than the device has (fewer chunks a
# request, no reduce once each request is one block): B x H16 S4096.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batch = int(os.environ.get("BATCH", "64"))
for fp8, fp8_q in ((True, True), (False, False)):
    res = []
    for sms in (None, 96, 64):
        fn = mlagen_decode(rt, "sm_90a", batch, 16, 4096, fp8, fp8_q, num_sms=sms)
        res.append(f"sms {sms or 'all'} {bench(fn) * 1e3:.1f} us (slots {fn.plan.slots})")
    print(f"B{batch} {'fp8 q+kv' if fp8_q else 'bf16'}:", " | ".join(res), flush=True)
