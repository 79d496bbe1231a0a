# Per-consumer cycle accumulators of the 64-row decode kernel: a library
# built from decode-h128-knockouts.patch with MLAGEN_DECODE_TRACE defined
# (clock reads and red.global.add into partial_out, plans without slots
# only). The clock reads perturb the kernel (B128 H128 414 us against
# 286): read the shares, not the absolute cycles.
import os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import mlagen_decode
import mlagen
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
N0 = ["wait S_a+prev", "softmax_a..PV_a[L] issue", "wait PV_a[L]", "free a.L", "wait alpha_b", "store P_a+rescale", "wait P_b", "PV_b[L]+S(a+2).1 issue", "wait<1>+free b.L", "S(a+2).2 issue", "", "prologue", "slab waits (in S issue)", "epilogue", "pairs", "loop"]
N1 = ["wait S_b", "wait alpha_a", "softmax_b..PV_b[R] issue", "wait P_a", "PV_a[R] issue", "wait<1>", "free b.R+wait<0>", "free a.R", "S(b+2) issue", "", "", "prologue", "slab waits (in S issue)", "epilogue", "pairs", "loop"]
for batch, seq in [tuple(map(int, x.split("x"))) for x in os.environ.get("SHAPES", "128x4096,64x4096").split(",")]:
    fn = mlagen_decode(rt, "sm_90a", batch, 128, seq, False)
    if fn.plan.slots != 0:
        print(f"B{batch}: plan has {fn.plan.slots} slots, skipped"); continue
    po = fn.plan.partial_out
    for _ in range(3): fn()
    tot = torch.zeros(64, dtype=torch.float64)
    runs = 5
    for _ in range(runs):
        flush.zero_()
        po[:64].zero_()
        fn(); torch.cuda.synchronize()
        tot += po[:64].view(torch.int32).to(torch.int64).double().cpu()
    print(f"B{batch} H128 S{seq}: cycles (lane 0 of warp 0 of each consumer), mean over {runs} runs")
    for c, names in ((0, N0), (1, N1)):
        a = tot[32 * c: 32 * c + 16] / runs
        pairs = a[14].item()
        blocks = pairs / (seq // 128)
        print(f" consumer {c}: {pairs:.0f} pairs, {blocks:.0f} blocks; per pair:")
        for k in list(range(10)) + [12]:
            if names[k]: print(f"   {k:2d} {names[k]:28s} {a[k].item() / pairs:8.0f}")
        print(f"   loop per pair {a[15].item() / pairs:8.0f}; per block: prologue {a[11].item() / blocks:8.0f} epilogue {a[13].item() / blocks:8.0f} loop {a[15].item() / blocks:9.0f}")
