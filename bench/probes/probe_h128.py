# Quick timing of the decode shapes, bf16 and fp8 caches.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, heads in ((128, 128), (32, 128), (64, 16)):
    for fp8 in (False, True):
        fn = mlagen_decode(rt, "sm_90a", batch, heads, 4096, fp8)
        ms = bench(fn)
        flops = 2 * batch * heads * 4096 * (576 + 512)
        res.append(f"B{batch}H{heads}{'f8' if fp8 else ''} {ms*1e3:.1f}us {flops/ms/1e9:.0f}TF")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
