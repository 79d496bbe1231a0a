# fp8 q in 64-row blocks (consume_seesaw_fp8, 128 heads): small decode steps
# for compute-sanitizer (memcheck, racecheck, synccheck): whole requests of
# odd and even tile counts, pairs merged in the grid and chunks for the
# reduce, each against the whole-request plan of the same inputs. E.g.
#   compute-sanitizer --tool synccheck python3 bench/probes/sanitize_seesaw.py
# KIND=bf16 runs the bf16 128-head kernel (consume_rows) the same way.
import os, sys, math
sys.path.insert(0, "bench")
import torch
from bench_decode import mlagen_decode
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batch, seq = 2, 1024
torch.manual_seed(0)
fp8 = os.environ.get("KIND", "fp8q") == "fp8q"
step = mlagen_decode(rt, "sm_90a", batch, 128, seq, fp8, fp8)
kernel = step.plan.kernel
cells = {n: c.cell_contents for n, c in zip(step.__code__.co_freevars, step.__closure__)}
q, kv, out, table, lens, lse = (cells[k] for k in ("q", "kv", "out", "table", "lens", "lse"))
for lengths in ([1024, 960], [300, 64], [1, 1000]):
    lens.copy_(torch.tensor(lengths, dtype=torch.int32))
    results = []
    # 132 SMs: one block a request and row block; 8 and 4: pairs and chunks.
    for sms in (132, 8, 4):
        plan = mlagen.DecodePlan(kernel, batch, num_sms=sms, max_seq_len=seq).update(lengths)
        out.fill_(float("nan"))
        kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                      kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8 else 1.0)
        torch.cuda.synchronize()
        results.append((sms, plan.groups, plan.slots, out.float().clone(), lse.clone()))
    o0, l0 = results[0][3], results[0][4]
    print(f"lens {lengths}: " + "; ".join(
        f"{sms} SMs: groups {g}, slots {s}, max |d out| {(o - o0).abs().max().item():.2e}, "
        f"|d lse| {(l - l0).abs().max().item():.2e}" for sms, g, s, o, l in results[1:]), flush=True)
