# Quick timing of the memory-bound decode shapes (H16), bf16 and fp8 caches.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch in (64, 128, 32):
    for fp8 in (False, True):
        fn = mlagen_decode(rt, "sm_90a", batch, 16, 4096, fp8)
        ms = bench(fn)
        gbs = batch * 4096 * 576 * (1 if fp8 else 2) / ms / 1e6
        res.append(f"B{batch}{'f8' if fp8 else ''} {ms*1e3:.1f}us {gbs:.0f}GB/s")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
