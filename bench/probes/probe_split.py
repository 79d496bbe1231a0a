# Decode steps whose requests are split into many chunks (few requests,
# long contexts; H16 bf16, page 64) next to B64 / B32 S4096: the cost of
# merging a request's chunks. Quick A/B: $NAME labels the line.
import os, sys
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, seq in ((1, 32768), (4, 16384), (8, 8192), (32, 4096), (64, 4096)):
    ms = bench(mlagen_decode(rt, "sm_90a", batch, 16, seq, False))
    gbps = batch * seq * 576 * 2 / ms / 1e6
    res.append(f"B{batch} S{seq} {ms*1e3:.1f}us {gbps:.0f}GB/s")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
