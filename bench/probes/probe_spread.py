# Precision of bf16 q on an fp8 cache at large logits: many rows, q rows scaled per head.
# HEADS (16) and Q_LEN (1) pick the rows a request: 32 (e.g. Q_LEN=2) runs the
# 32-row blocks.
import os, sys, torch
sys.path.insert(0, "python/tests")
import decode_device_test as t
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
heads, q_len = int(os.environ.get("HEADS", 16)), int(os.environ.get("Q_LEN", 1))
for lo, hi in ((0, 0), (-6, 3)):
    lens = [4096] * 48 + [1000, 17, 300, 64] * 4
    sig = t.signature("sm_90a", heads, q_len, 64, kv="fp8e4m3")
    k = rt.kernel(sig)
    q, kv, table, ln = t.make_inputs(lens, heads, q_len, 64, torch.bfloat16, seed=5, fp8=True)
    exps = torch.arange(heads, device="cuda") % (hi - lo + 1) + lo
    q = q * (2.0 ** exps).to(q.dtype).view(1, 1, heads, 1)
    plan = mlagen.DecodePlan(k, max_batch=len(lens))
    out, lse = t.run(k, plan, q, kv, table, ln, kv_scale=t.KV_SCALE)
    ro, rl, _ = t.reference(q, kv, table, ln, 64, t.KV_SCALE, 1.0)
    d = (out.float() - ro).abs()
    per_head = d.amax(dim=(0, 1, 3))
    ld = (lse - rl).abs()
    print(os.environ.get("NAME"), f"q 2^{lo}..2^{hi}: out err {d.max().item():.2e} (>2e-2: {int((d > 2e-2).sum())}), lse abs {ld.max().item():.2e}, by head {[f'{x:.1e}' for x in per_head.tolist()]}", flush=True)
