"""One-key requests whose logit is set per row: at which logits does the
portable (sm_80) decode lose a row's output?"""
import sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "tests"))
import decode_device_test as t  # noqa: E402
import mlagen  # noqa: E402

arch = mlagen.default_arch()
rt = mlagen.Runtime()


def case(heads, fp8, lens, logits):
    sig = t.signature(arch, heads, 1, 64, kv="fp8e4m3" if fp8 else None)
    kernel = rt.kernel(sig)
    q, kv, table, l = t.make_inputs(lens, heads, 1, 64, torch.bfloat16, seed=7, fp8=fp8)
    kvs = t.KV_SCALE if fp8 else 1.0
    for b in range(len(lens)):
        k0 = kv[table[b, 0].long(), 0].float() * kvs  # key 0 of request b
        q[b, 0] = (logits[:, None] * k0[None, :] / (t.SCALE * k0.dot(k0))).to(q.dtype)
    plan = mlagen.DecodePlan(kernel, max_batch=len(lens), num_sms=1)
    out, lse = t.run(kernel, plan, q, kv, table, l, kv_scale=kvs)
    torch.cuda.synchronize()
    ref, ref_lse, _ = t.reference(q, kv, table, l, 64, kvs)
    d = (out.float() - ref).abs()[:, 0].amax(-1)  # [batch, heads]
    print(f"{sig} lens={lens}")
    for b in range(len(lens)):
        bad = [(round(logits[h].item(), 1), round(ref_lse[b, 0, h].item(), 1)) for h in range(heads) if d[b, h] > 5e-2]
        print(f"  request {b}: max err {d[b].max().item():.2e}; bad rows (logit, ref lse): {bad}")


import os
for heads in (32, 16, 128):
    logits = torch.linspace(-80, 20, heads, device=t.DEV)
    case(heads, True, [1], logits)
    if os.environ.get("ONLY_FP8_ONE_KEY"):
        continue
    case(heads, False, [1], logits)
    case(heads, True, [40], logits)
