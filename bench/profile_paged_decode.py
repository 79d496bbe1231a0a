"""One paged GQA decode configuration, launched a few times, for ncu:

    ncu --kernel-name mlagen_paged_decode --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section Occupancy --section LaunchStats \
        python3 bench/profile_paged_decode.py [batch] [page] [bf16|fp8]

(PYTHONPATH=python, MLAGEN_LIBRARY set as for the benchmark.)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import bench_paged_decode  # noqa: E402
import mlagen  # noqa: E402

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
page = int(sys.argv[2]) if len(sys.argv) > 2 else 16
fp8 = len(sys.argv) > 3 and sys.argv[3] == "fp8"
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
arch = mlagen.default_arch()
step = bench_paged_decode.mlagen_paged(rt, arch, batch, page, fp8)
for _ in range(5):
    step()
torch.cuda.synchronize()
