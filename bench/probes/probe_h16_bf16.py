# Memory-bound bf16 decode (H16 S4096, page 64): us and GB/s of the cache
# bytes at B32/B64/B128, and cuDNN's GQA decode B64 S4096 GB/s (the issue's
# reference) in the same process. Quick A/B: $NAME labels the line.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench, cudnn_gqa_decode_GBps, QK, V
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch in (64, 128, 32):
    ms = bench(mlagen_decode(rt, "sm_90a", batch, 16, 4096, False))
    gbps = (batch * 4096 * QK * 2 + batch * 16 * (QK + V) * 2) / ms / 1e6
    res.append(f"B{batch} {ms*1e3:.1f}us {gbps:.0f}GB/s")
res.append(f"cuDNN B64 {cudnn_gqa_decode_GBps(64, 4096):.0f}GB/s")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
