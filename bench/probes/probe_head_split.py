# What a head split would give the memory-bound 16-head decode, before
# building one: a request's 16 heads in two blocks of 8 (each block streams
# the whole request; the second read of a page should come from L2) against
# today's plan (two chunks a request, merged in a cluster or in the grid).
# Emulated with the 8-head kernel: batch 2B of 8 heads whose requests 2i and
# 2i + 1 share one block table, so the step reads B requests' pages as a B x
# 16-head step would. Same process, bench_decode's timing (flushed L2).
# SHAPES="64:4096 32:4096 64:2048"; MODES="bf16 fp8kv fp8q".
import math, os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import bench, QK, V, PAGE
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))


def step(batch, heads, seq, mode, share=1, num_sms=None):
    fp8, fp8_q = mode != "bf16", mode == "fp8q"
    kernel = rt.kernel(f"decode qk={QK} v={V} hq={heads} q_len=1 page={PAGE} mask=causal lse=1 "
                       f"q={'fp8e4m3' if fp8_q else 'bf16'} kv={'fp8e4m3' if fp8 else 'bf16'} out=bf16 arch=sm_90a")
    pages = seq // PAGE
    owners = batch // share  # requests whose pages the step reads
    q = torch.randn(batch, 1, heads, QK, device="cuda", dtype=torch.bfloat16)
    if fp8_q:
        q = (q * 32).to(torch.float8_e4m3fn)
    kv = torch.randn(owners * pages, PAGE, QK, device="cuda", dtype=torch.bfloat16)
    if fp8:
        kv = (kv * 16).to(torch.float8_e4m3fn)
    table = torch.randperm(owners * pages, device="cuda", dtype=torch.int32).view(owners, pages)
    table = table.repeat_interleave(share, dim=0).contiguous()
    lens = torch.full((batch,), seq, device="cuda", dtype=torch.int32)
    out = torch.empty(batch, 1, heads, V, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(batch, 1, heads, device="cuda", dtype=torch.float32)
    plan = mlagen.DecodePlan(kernel, batch, num_sms=num_sms, max_seq_len=seq).update([seq] * batch)
    torch.cuda.synchronize()
    fn = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                               kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8_q else 1.0)
    fn.out = out
    return fn


shapes = [tuple(int(x) for x in s.split(":")) for s in os.environ.get("SHAPES", "64:4096 32:4096").split()]
modes = os.environ.get("MODES", "bf16 fp8q").split()
for rnd in range(int(os.environ.get("ROUNDS", "2"))):
    for batch, seq in shapes:
        for mode in modes:
            base = step(batch, 16, seq, mode)
            split = step(2 * batch, 8, seq, mode, share=2)
            whole = step(2 * batch, 8, seq, mode, share=2, num_sms=2 * batch) if 2 * batch <= 132 else None
            t = [bench(base) * 1e3, bench(split) * 1e3]
            if whole is not None:
                t.append(bench(whole) * 1e3)
            print(f"round {rnd} B{batch} S{seq} {mode}: B x 16 heads {t[0]:.1f} us | 2B x 8 heads, pairs share pages "
                  f"{t[1]:.1f} us" + (f" | same, one block a request {t[2]:.1f} us" if whole else ""), flush=True)
