# Paged GQA decode (Llama-3-8B heads, d128) at few long requests, whose plans
# split each request into chunks merged by the reduce; bf16 and fp8, pages
# 16 and 64. `bash bench/probes/ab.sh bench/probes/probe_paged_split.py a b`.
import os, sys
sys.path.insert(0, "bench")
import bench_paged_decode as bpd
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, seq in ((1, 32768), (4, 16384), (8, 8192), (16, 8192), (32, 4096), (64, 4096)):
    bpd.SEQ = seq
    for page, fp8 in ((16, False), (64, False), (16, True)):
        us = bpd.bench(bpd.mlagen_paged(rt, "sm_90a", batch, page, fp8)) * 1e3
        res.append(f"B{batch} S{seq} p{page}{' fp8' if fp8 else ''} {us:.1f}")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
