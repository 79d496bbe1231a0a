"""With the debugp library: P, residue, Q and K columns the sm_80 decode
kept for a one-key request at 32 heads (rows 16 (bad) and 25 (good))."""
import sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "tests"))
import decode_device_test as t  # noqa: E402
import mlagen  # noqa: E402

rt = mlagen.Runtime()
heads = 32
sig = t.signature("sm_80", heads, 1, 64, kv="fp8e4m3")
kernel = rt.kernel(sig)
lens = [1]
q, kv, table, l = t.make_inputs(lens, heads, 1, 64, torch.bfloat16, seed=7, fp8=True)
k0 = kv[table[0, 0].long(), 0].float() * t.KV_SCALE
logits = torch.linspace(-80, 20, heads, device=t.DEV)
q[0, 0] = (logits[:, None] * k0[None, :] / (t.SCALE * k0.dot(k0))).to(q.dtype)
plan = mlagen.DecodePlan(kernel, max_batch=1, num_sms=1)
out, lse = t.run(kernel, plan, q, kv, table, l, kv_scale=t.KV_SCALE)
torch.cuda.synchronize()
o = out.float()[0, 0]
torch.set_printoptions(precision=4, linewidth=200, sci_mode=True)
print("k0 raw[:16]", kv[table[0, 0].long(), 0].float()[:16])
for r in (0, 16, 20, 24, 31):
    print(f"row {r} logit {logits[r].item():.2f} lse {lse[0,0,r].item():.3f}")
    print("  P  ", o[r, :32])
    print("  R*1024", o[r, 64:96])
    print("  q16", o[r, 128:144], "vs", q[0, 0, r, :16].float())
    print("  k16", o[r, 160:176])
    print("  max*unit, sums", o[r, 192:196])
    print("  red_max raw by granule", o[r, 200:204], "warps M,N granules warps", o[r, 210:214])
    print("  per warp (m raw, base, max, sum):", o[r, 300:316].view(4, 4))
