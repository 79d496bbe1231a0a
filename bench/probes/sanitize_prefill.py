# Small sm_90a prefill launches for compute-sanitizer (synccheck, memcheck):
# the three-consumer d64 kernel (skipped and half tiles, the turn ring of
# three), the two-consumer 192/128 and d128 kernels, and the one-consumer
# d64 with a window and soft cap, each over a ragged causal batch that has
# blocks with fewer keys than queries (len_k < len_q: warpgroups without
# tiles) and an empty context (len_k 0). E.g.
#   compute-sanitizer --tool synccheck python3 bench/probes/sanitize_prefill.py
import math, os, torch
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
variants = [("qk=64 v=64 hq=32 hkv=8 mask=causal", 64, 64, 32, 8),
            ("qk=192 v=128 hq=16 hkv=16 mask=causal", 192, 128, 16, 16),
            ("qk=128 v=128 hq=32 hkv=8 mask=causal", 128, 128, 32, 8),
            ("qk=64 v=64 hq=32 hkv=8 mask=causal window=127,0 softcap=30", 64, 64, 32, 8)]
lens_q = [700, 300, 129, 1]
lens_k = [700, 100, 0, 64]
for sig, dqk, dv, hq, hkv in variants:
    kernel = rt.kernel(f"prefill {sig} lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_90a")
    torch.manual_seed(0)
    q = torch.randn(sum(lens_q), hq, dqk, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(sum(lens_k), hkv, dqk, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(sum(lens_k), hkv, dv, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(sum(lens_q), hq * dv, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(hq, sum(lens_q), device="cuda", dtype=torch.float32)
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), device="cuda", dtype=torch.int32)
    kernel.prefill(q, k, v, out, cu_q, cu_k, max(lens_q), lse=lse, softmax_scale=1 / math.sqrt(dqk))
    torch.cuda.synchronize()
    print(f"{sig}: finite outputs {bool(torch.isfinite(out.float()).all())}", flush=True)
