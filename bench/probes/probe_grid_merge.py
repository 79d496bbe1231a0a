# Split decode steps with requests merged in the decode grid (default) and
# with MLAGEN_GRID_MERGE=0 MLAGEN_CLUSTER_MERGE=0 (the reduce; REF picks), in one process: same inputs, the
# outputs compared (bit for bit where the merge order is the reduce's), then
# the step times alternated (do_bench).
# SHAPES="heads:batch:seq[:fp8q] ...", e.g. "128:32:4096 16:8:8192:fp8q".
import math, os, sys, torch
sys.path.insert(0, "bench")
from bench_decode import QK, V, PAGE, bench
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
shapes = os.environ.get("SHAPES", "128:32:4096 128:8:8192 16:32:4096 16:8:8192 16:16:8192 "
                        "16:64:4096 16:1:32768 16:32:4096:fp8q 128:128:4096").split()

def step_for(heads, batch, seq, fp8q, grid):
    kernel = rt.kernel(f"decode qk={QK} v={V} hq={heads} q_len=1 page={PAGE} mask=causal lse=1 "
                       f"q={'fp8e4m3' if fp8q else 'bf16'} kv={'fp8e4m3' if fp8q else 'bf16'} "
                       f"out=bf16 arch=sm_90a")
    torch.manual_seed(0)
    pages = seq // PAGE
    q = torch.randn(batch, 1, heads, QK, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(batch * pages, PAGE, QK, device="cuda", dtype=torch.bfloat16)
    if fp8q:
        q, kv = (q * 32).to(torch.float8_e4m3fn), (kv * 16).to(torch.float8_e4m3fn)
    table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), seq, device="cuda", dtype=torch.int32)
    out = torch.full((batch, 1, heads, V), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.full((batch, 1, heads), float("nan"), device="cuda", dtype=torch.float32)
    # The reference plan: REF's variables set to 0 (default: no grid and no
    # cluster merge, so the reduce; "MLAGEN_CLUSTER_MERGE" alone compares a
    # cluster merge with the grid's).
    ref = os.environ.get("REF", "MLAGEN_GRID_MERGE MLAGEN_CLUSTER_MERGE").split()
    if not grid:
        for name in ref:
            os.environ[name] = "0"
    plan = mlagen.DecodePlan(kernel, batch, max_seq_len=seq).update([seq] * batch)
    for name in ref:
        os.environ.pop(name, None)
    step = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                 kv_scale=1 / 16 if fp8q else 1.0, q_scale=1 / 32 if fp8q else 1.0)
    return step, out, lse, plan

for shape in shapes:
    f = shape.split(":")
    heads, batch, seq, fp8q = int(f[0]), int(f[1]), int(f[2]), len(f) > 3
    grid, out_g, lse_g, plan_g = step_for(heads, batch, seq, fp8q, True)
    red, out_r, lse_r, plan_r = step_for(heads, batch, seq, fp8q, False)
    grid(); red(); torch.cuda.synchronize()
    same = torch.equal(out_g.view(torch.int16), out_r.view(torch.int16)) and \
        torch.equal(lse_g.view(torch.int32), lse_r.view(torch.int32))
    finite = bool(torch.isfinite(out_g.float()).all() and torch.isfinite(lse_g).all())
    # A build that merges in another order than the reduce (e.g.
    # cluster-pair-tree.patch) is not bitwise: its largest differences.
    diff = (out_g.float() - out_r.float()).abs().max().item()
    lse_diff = (lse_g - lse_r).abs().max().item()
    # Replays without a new plan copy: the counters must have returned to 0.
    first = out_g.clone()
    for _ in range(3):
        grid()
    torch.cuda.synchronize()
    again = torch.equal(out_g.view(torch.int16), first.view(torch.int16))
    times = {"grid": [], "reduce": []}
    for _ in range(2):
        times["grid"].append(bench(grid) * 1e3)
        times["reduce"].append(bench(red) * 1e3)
    print(f"{os.environ.get('NAME', '?')} H{heads} B{batch} S{seq}{' fp8q' if fp8q else ''}: "
          f"work {plan_g.num_work}, reduce slots grid/off {plan_g.slots}/{plan_r.slots}; "
          f"bitwise {same} (max diff {diff:.1e}, lse {lse_diff:.1e}), finite {finite}, "
          f"after replays {again}; "
          f"grid {' '.join(f'{t:.1f}' for t in times['grid'])} us, "
          f"reduce {' '.join(f'{t:.1f}' for t in times['reduce'])} us", flush=True)
