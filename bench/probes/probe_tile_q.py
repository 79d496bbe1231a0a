# A/B probe in one library: the sm_90a prefill with each pinned tile_q
# (TILE_QS, default "128 192"; 0 = the compiler's choice), rounds
# alternating, cuDNN alongside; head dim 64 shapes unless ONLY names others
# (comma-separated labels).
# Run from the repo root: MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/probes/probe_tile_q.py
import os, sys, torch
sys.path.insert(0, "bench")
from bench_prefill import bench, flops, mlagen_fn, sdpa_fns
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
tile_qs = [int(t) for t in os.environ.get("TILE_QS", "128 192").split()]
# label, lengths, q heads, kv heads, qk dim, v dim, causal
shapes = [("d64 B4 S4096", [4096] * 4, 32, 8, 64, 64, True),
          ("d64 B8 S2048", [2048] * 8, 32, 8, 64, 64, True),
          ("d64 B1 S16384", [16384], 32, 8, 64, 64, True),
          ("d64 B4 S4096 full", [4096] * 4, 32, 8, 64, 64, False),
          ("d64 MHA B4 S4096", [4096] * 4, 16, 16, 64, 64, True),
          ("d80 B4 S4096", [4096] * 4, 32, 32, 80, 80, True),
          ("d96 B4 S4096", [4096] * 4, 32, 32, 96, 96, True),
          ("d128 B4 S4096", [4096] * 4, 32, 8, 128, 128, True),
          ("d112 B4 S4096", [4096] * 4, 16, 8, 112, 112, True),
          ("d160 B4 S4096", [4096] * 4, 16, 16, 160, 160, True),
          ("d96 B4 S4096 full", [4096] * 4, 32, 32, 96, 96, False),
          ("d256 B4 S4096", [4096] * 4, 16, 8, 256, 256, True)]
only = os.environ.get("ONLY", "d64 B4 S4096,d64 B8 S2048,d64 B1 S16384,d64 B4 S4096 full,d64 MHA B4 S4096")
for label, lens, h, hkv, dqk, dv, causal in shapes:
    if only and label not in only.split(","):
        continue
    fl = flops(lens, h, causal, dqk, dv)
    fns = {t: mlagen_fn(rt, "sm_90a", lens, h, causal, dqk, dv, hkv, t) for t in tile_qs}
    cudnn = sdpa_fns(lens, h, causal, dqk, dv)["cudnn"]
    res = {t: [] for t in tile_qs}
    res["cudnn"] = []
    for _ in range(int(os.environ.get("ROUNDS", "2"))):
        for t in tile_qs:
            res[t].append(fl / bench(fns[t]) / 1e9)
        res["cudnn"].append(fl / bench(cudnn) / 1e9)
    print(label, " | ".join(f"{key}: " + ", ".join(f"{x:.1f}" for x in xs) for key, xs in res.items()), flush=True)
    del cudnn, fns
    torch.cuda.empty_cache()
