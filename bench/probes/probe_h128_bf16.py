# B128/B32 H128 bf16 decode only (quick A/B).
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch in (128, 32):
    ms = bench(mlagen_decode(rt, "sm_90a", batch, 128, 4096, False))
    res.append(f"B{batch}H128 {ms*1e3:.1f}us {2*batch*128*4096*1088/ms/1e9:.0f}TF")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
