# Small decode steps for compute-sanitizer: one request of 4096 keys and two
# of 1024 and 700 (one-tile chunks, DecodePlanner::smallStepChunkKeysFor, and
# the reduce), at 16 and 128 heads, bf16 / fp8 cache / fp8 q + cache
# (KINDS), planned on an engine's buffers (max_batch 256), so the grid
# covers only the plan's items (plan_work); then the same plan launched
# without its item count (the grid of the most items a plan of the batch
# holds, as under graph capture), which must give the same bits. E.g.
#   compute-sanitizer --tool memcheck python3 bench/probes/sanitize_small_steps.py
import math, os, torch
import mlagen
QK, V, PAGE = 576, 512, 64
rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
failed = 0
for heads in [int(h) for h in os.environ.get("HEADS", "16,128").split(",")]:
    for kind in os.environ.get("KINDS", "bf16,fp8,fp8q").split(","):
        fp8, fp8_q = kind in ("fp8", "fp8q"), kind == "fp8q"
        kernel = rt.kernel(f"decode qk={QK} v={V} hq={heads} q_len=1 page={PAGE} mask=causal lse=1 "
                           f"q={'fp8e4m3' if fp8_q else 'bf16'} kv={'fp8e4m3' if fp8 else 'bf16'} "
                           f"out=bf16 arch=sm_90a")
        for lens_list in ([4096], [1024, 700]):
            torch.manual_seed(0)
            batch, pages = len(lens_list), max(math.ceil(n / PAGE) for n in lens_list)
            q = torch.randn(batch, 1, heads, QK, device="cuda", dtype=torch.bfloat16)
            kv = torch.randn(batch * pages, PAGE, QK, device="cuda", dtype=torch.bfloat16)
            if fp8:
                kv = (kv * 16).to(torch.float8_e4m3fn)
            if fp8_q:
                q = (q * 32).to(torch.float8_e4m3fn)
            table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
            lens = torch.tensor(lens_list, device="cuda", dtype=torch.int32)
            plan = mlagen.DecodePlan(kernel, 256)
            results = []
            for whole_grid in (False, True):
                plan.update(lens_list)
                items = plan.num_work
                if whole_grid:
                    plan.num_work = -1
                out = torch.full((batch, 1, heads, V), float("nan"), device="cuda", dtype=torch.bfloat16)
                lse = torch.full((batch, 1, heads), float("nan"), device="cuda")
                kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                              kv_scale=1 / 16 if fp8 else 1.0, q_scale=1 / 32 if fp8_q else 1.0)
                results.append((out, lse))
            torch.cuda.synchronize()
            same = all(torch.equal(a, b) for a, b in zip(*results))
            finite = bool(results[0][0].isfinite().all() and results[0][1].isfinite().all())
            failed += not (same and finite)
            print(f"H{heads} {kind} lens={lens_list} items {items} of {plan.work_capacity}: "
                  f"same bits without the item count {same}, finite {finite}", flush=True)
print("FAILED" if failed else "all steps pass", flush=True)
