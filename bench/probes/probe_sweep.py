# Decode step time against sequence length (B x H16, page 64), bf16 and
# fp8 q+kv, after do_bench's writing flush and after a reading one (L2 left
# clean): the intercept of time over S is a step's fixed cost, the slope
# its streaming rate.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import flushed_us, mlagen_decode, bench
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batches = [int(b) for b in os.environ.get("BATCHES", "128,64").split(",")]
seqs = [int(s) for s in os.environ.get("SEQS", "1024,2048,4096,8192").split(",")]
for batch in batches:
    for seq in seqs:
        out = []
        for name, fp8, fp8_q in (("bf16", False, False), ("f8q", True, True)):
            fn = mlagen_decode(rt, "sm_90a", batch, 16, seq, fp8, fp8_q)
            out.append(f"{name} {bench(fn) * 1e3:.1f} / {flushed_us(fn, 'read'):.1f}")
        print(f"{os.environ.get('NAME', '?')} B{batch} S{seq} (us, zero_ / read flush):", " | ".join(out), flush=True)
