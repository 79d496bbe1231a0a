# Paged GQA decode (Llama-3-8B heads, d128): an fp8 cache against bf16 at the
# memory-bound shapes, pages 16 and 64; the ratio is fp8 tokens/s over bf16.
# `bash bench/probes/ab.sh bench/probes/probe_paged_fp8.py a b`; TILE_K=128 pins
# the fp8 kernel's keys per tile.
import os, sys
sys.path.insert(0, "bench")
import bench_paged_decode as bpd
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
res = []
for batch, seq in ((64, 4096), (128, 4096), (16, 8192)):
    bpd.SEQ = seq
    for page in (16, 64):
        t = {fp8: bpd.bench(bpd.mlagen_paged(rt, "sm_90a", batch, page, fp8, int(os.environ.get("TILE_K", "0")) if fp8 else 0)) * 1e3 for fp8 in (False, True)}
        res.append(f"B{batch} S{seq} p{page} bf16 {t[False]:.1f} fp8 {t[True]:.1f} ({t[False] / t[True]:.2f}x)")
print(os.environ.get("NAME", "?"), " | ".join(res), flush=True)
