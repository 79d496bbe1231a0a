# Decode steps with shuffled (bench_decode's randperm) and in-order block
# tables, and the 128-head step at longer sequences, beside the bf16 GEMM of
# bench_decode, in one process: does page order matter, and where does the
# 128-head rate go once a step's fixed part is amortised?
#   PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/probes/probe_table_order.py
import os, sys
import torch
sys.path.insert(0, "bench")
from bench_decode import QK, V, bench, mlagen_decode
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))


def step(batch, heads, seq, in_order):
    ms = bench(mlagen_decode(rt, "sm_90a", batch, heads, seq, in_order=in_order))
    return ms, 2.0 * batch * heads * seq * (QK + V) / ms / 1e9, batch * seq * QK * 2 / ms / 1e6


a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
gemm = 2 * 8192 ** 3 / bench(lambda: a @ b) / 1e9
del a, b
print(f"torch bf16 GEMM 8192^3: {gemm:.1f} TFLOP/s", flush=True)
for batch, heads, seq in ((128, 128, 4096), (64, 16, 4096), (128, 16, 4096), (128, 128, 16384),
                          (128, 128, 32768)):
    for in_order in (False, True):
        ms, tflops, gbps = step(batch, heads, seq, in_order)
        print(f"B{batch} H{heads} S{seq} {'in order' if in_order else 'shuffled'}: {ms * 1e3:.1f} us, "
              f"{tflops:.1f} TFLOP/s ({tflops / gemm:.3f}x GEMM), {gbps:.0f} GB/s", flush=True)
        torch.cuda.empty_cache()
