# A grid pair's counters that do not start at zero (as after a launch
# aborted mid-merge): the 64-row kernel's waiting block gives up after
# 10 ms instead of hanging, and a fresh plan copy (update) makes the next
# step right again. H128 B32 S4096 (every request a pair).
import os, sys, time, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
batch, seq = 32, 4096
step = mlagen_decode(rt, "sm_90a", batch, 128, seq)
plan = step.plan
begin, end = 4 + 2 * batch, plan.plan.numel() - 4 * plan.work_capacity  # the arrival counters
def outputs():  # the step's out and lse (its closure's)
    cells = [c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, torch.Tensor)]
    return [t.clone() for t in cells if t.dtype == torch.float32 or (t.dtype == torch.bfloat16 and t.shape[-1] == 512)]
step(); torch.cuda.synchronize()
ref = outputs()
ok = True
for poison in (1, 2, 3, 7):
    plan.plan[begin:end] = poison
    t0 = time.perf_counter(); step(); torch.cuda.synchronize(); ms = (time.perf_counter() - t0) * 1e3
    left = int((plan.plan[begin:end] != 0).sum())
    plan.update([seq] * batch)
    step(); torch.cuda.synchronize()
    same = all(torch.equal(a, b) for a, b in zip(ref, outputs()))
    ok = ok and ms < 100 and same
    print(f"counters at {poison}: step {ms:.1f} ms, {left} counters not zero after it; "
          f"after a plan update the next step is bitwise the first: {same}", flush=True)
print("PASS" if ok else "FAIL", flush=True)
