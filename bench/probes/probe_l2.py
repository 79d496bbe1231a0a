# H128 decode with the cache resident in L2 (no flush between launches,
# 38 MB of keys) against the same step after do_bench's flush: if the
# resident step is much faster, the kernel waits on memory, not on its math.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch in (8, 32):
    fn = mlagen_decode(rt, "sm_90a", batch, 128, 4096)
    flops = 2 * batch * 128 * 4096 * (576 + 512)
    for _ in range(10):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        fn()
    end.record()
    torch.cuda.synchronize()
    ms_hot = start.elapsed_time(end) / 50
    ms_flushed = bench(fn)
    res.append(f"B{batch}H128 hot {ms_hot*1e3:.1f}us {flops/ms_hot/1e9:.0f}TF flushed {ms_flushed*1e3:.1f}us {flops/ms_flushed/1e9:.0f}TF")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
