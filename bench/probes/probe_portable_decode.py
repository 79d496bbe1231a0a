"""The portable (sm_80) MLA decode on this GPU, bf16 and fp8 cache, timed as
bench_decode.py times it (do_bench, its flush), us a step."""
import sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_decode as bd  # noqa: E402
import mlagen  # noqa: E402

rt = mlagen.Runtime()
arch = mlagen.default_arch()
for batch, heads in ((16, 16), (64, 16), (128, 16), (32, 128), (128, 128)):
    row = []
    for fp8 in (False, True):
        row.append(bd.bench(bd.mlagen_decode(rt, arch, batch, heads, 4096, fp8=fp8)) * 1e3)
    print(f"{arch} B{batch} H{heads} S4096: bf16 {row[0]:.1f} us, fp8 {row[1]:.1f} us", flush=True)
