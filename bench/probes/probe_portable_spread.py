"""Which rows the portable (sm_80) decode gets wrong with q rows of spread
magnitudes (decode_device_test.py's spread_rows case) on an fp8 cache."""
import sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "tests"))
import decode_device_test as t  # noqa: E402
import mlagen  # noqa: E402

arch = mlagen.default_arch()
rt = mlagen.Runtime()
ragged = [1, 17, 300, 4096, 16384, 64, 2, 1000]
sms_all = torch.cuda.get_device_properties(0).multi_processor_count


def case(heads, fp8, exps, sms, lens=ragged):
    sig = t.signature(arch, heads, 1, 64, kv="fp8e4m3" if fp8 else None)
    kernel = rt.kernel(sig)
    q, kv, table, l = t.make_inputs(lens, heads, 1, 64, torch.bfloat16,
                                    seed=heads * 100 + 10 + 64, fp8=fp8)
    q = q * (2.0 ** exps(torch.arange(heads, device=t.DEV))).to(q.dtype).view(1, 1, heads, 1)
    kvs = t.KV_SCALE if fp8 else 1.0
    plan = mlagen.DecodePlan(kernel, max_batch=len(lens), num_sms=sms)
    out, lse = t.run(kernel, plan, q, kv, table, l, kv_scale=kvs)
    torch.cuda.synchronize()
    ref, ref_lse, emu = t.reference(q, kv, table, l, 64, kvs)
    d = (out.float() - ref).abs()[:, 0]  # [batch, heads, 512]
    per_head = d.amax(dim=(0, 2))
    per_req = d.amax(dim=(1, 2))
    bad = (d > 5e-2)
    print(f"{sig} sms={sms} work={plan.num_work} err={d.max().item():.3e} "
          f"bad={int(bad.sum())}")
    print("  per request:", " ".join(f"{x:.2e}" for x in per_req.tolist()))
    print("  per head:", " ".join(f"{x:.1e}" for x in per_head.tolist()))
    if bad.any():
        b, h, c = [int(x) for x in bad.nonzero()[0]]
        print(f"  first bad: request {b} (len {lens[b]}) head {h} col {c}: got "
              f"{out[b, 0, h, c].item():.4f} ref {ref[b, 0, h, c].item():.4f}; "
              f"cols bad in that row {int(bad[b, h].sum())}; "
              f"lse {lse[b, 0, h].item():.4f} ref {ref_lse[b, 0, h].item():.4f}")


spread = lambda h: h % 10 - 6
for heads in (32, 128, 16):
    case(heads, True, spread, sms_all)
case(32, True, spread, 1)
case(32, False, spread, sms_all)
case(32, True, lambda h: torch.clamp(h % 10 - 6, max=0), sms_all)
case(32, True, lambda h: torch.clamp(h % 10 - 6, min=0), sms_all)
case(32, True, lambda h: h * 0, sms_all)
case(32, True, spread, sms_all, lens=[4096] * 8)
case(32, True, spread, sms_all, lens=[64] * 8)
