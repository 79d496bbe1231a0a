"""Absorbed MLA decode on the GPU: mlagen against an fp32 torch reference.

Run on a CUDA machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/decode_device_test.py
Writes decode_numerics.json under $OUT (or /tmp). Exit status 1 on any failure.

Covers: heads 1, 8, 16, 128; pages of 1, 16 and 64 keys in a shuffled cache;
ragged sequence lengths from 0 to 16384 keys; 1 and 4 query tokens; row
maxima that climb and jump by hundreds through a request (climb_logits); plans
that split long requests and plans that split none; a CUDA graph captured
once and replayed with new plans equals eager runs; a batch-invariant kernel
gives a request the same bits alone and in other batches on other SM counts;
an fp8 e4m3 cache with a per-tensor kv_scale (heads 16 and 128, pages 1 and
64, q_len 1 and 4; 32 rows a request: 16 heads at q_len 2, 32 heads; and q
rows of magnitudes 2^-6..2^3, which sm_90a splits
into e4m3 by a power of two a row) against the fp32 reference computed from
the dequantised cache (kv_scale * float(stored)); fp8 e4m3 q with its
per-tensor q_scale on an fp8 cache (heads 16 and 128, pages 1 and 64, q_len 1
and 4) against the reference of the dequantised q and cache; on sm_90a the
kernels that multiply e4m3 (fp8 q; bf16 q in 16-row blocks) within the looser
bounds of e4m3 products (FP8_PRODUCTS_ATOL);
checked mode: a
seq_len longer than its block-table row and a table entry past the cache are
reported by plan.check() with the request named, that request gets zeros and
LSE -inf, and the other requests are bit-identical to an unchecked run.
"""
import json
import math
import os
import random
import sys

import torch

import mlagen

# An output element passes when |got - ref| <= max(ATOL, 1.01 |ref - out_dtype(ref)|,
# 2 emu_err): 1e-2; or the rounding error of the fp32 reference itself in out's dtype
# where that is larger (rows that see few keys reach |out| > 4, where half a bf16 ulp
# is 0.0156); or twice the case's largest error of a low-precision emulation of the
# same decode, FlashAttention's own test rule, which the prefill test uses too:
# P = exp(s - rowmax) rounded to out's dtype before P.V, as FlashMLA's kernels and
# ours do. Rows that hang on a few keys carry that rounding (2^-9 of a weight).
ATOL = 1e-2
ROUNDING_SLACK = 1.01
EMULATION_FACTOR = 2.0
LSE_RTOL = 1e-3   # relative,
LSE_FLOOR = 1e-2  # of |ref| floored here: a row of one key has LSE = its logit, which
                  # may be ~0; fp32 sums of 576 products in another order differ by ~1e-6
QK, V = 576, 512
SCALE = 1.0 / math.sqrt(192)  # DeepSeek-V3: the unabsorbed head dim
DEV = "cuda"


# An fp8 cache on sm_90a is multiplied as e4m3 by the tensor cores with fp8 q, and
# with bf16 q in 16-row blocks (split into e4m3 hi + lo, ~8 bits together): they add the products with fewer bits than
# fp32 (the logits, hence the LSE, move by up to ~3e-3 here: H200, 2026-11-21) and
# P goes as e4m3 plus its e4m3 residue (~8 bits). Those cases pass an output
# element within FP8_PRODUCTS_ATOL (or the rounding slack) and an LSE within
# FP8_PRODUCTS_LSE_ATOL (or LSE_RTOL): well inside what fp8 q's own e4m3 rounding
# (2^-4 of each element, the caller's choice) moves the logits.
FP8_PRODUCTS_ATOL = 2e-2
FP8_PRODUCTS_LSE_ATOL = 1e-2
# fp8 q in sm_90a's 64-row blocks (FlashMLA's seesaw, 128 heads) keeps S in one
# accumulator (a second spills beside O^T: 40-47% slower): where q is parallel to a key and the
# logit (80) is a sum of like-signed terms, its LSE moves by up to 1.6e-2
# (8e-3 relative; H100, row_logits), the 32-row blocks' (two accumulators) by
# 5.8e-3. fp8 q's own rounding moves such a logit by about 2^-5 of itself.
FP8_SEESAW_LSE_ATOL = 2e-2
# climb_logits rows are dominated by a few keys: P rounded to 16 bits (2^-9 relative)
# and the row sum taken before that rounding each move such a row's output by up to
# 2^-9 max|v| (~0.009 for |v| <= 4.5), so those cases pass within twice that.
CLIMB_ATOL = 2e-2
KV_SCALE = 0.0625  # fp8 cases: the cache stores randn / KV_SCALE (|x| up to ~80 of 448)
Q_SCALE = 0.03125  # fp8 q: q stores randn / Q_SCALE (|x| up to ~160 of 448)


def signature(arch, heads, q_len, page, dtype="bf16", batch_invariant=False, kv=None, q=None,
              tile_q=0):
    return (f"decode qk={QK} v={V} hq={heads} q_len={q_len} page={page} mask=causal lse=1 "
            f"q={q or dtype} kv={kv or dtype} out={dtype} batch_invariant={int(batch_invariant)} "
            + (f"tile_q={tile_q} " if tile_q else "") + f"arch={arch}")


def make_inputs(seq_lens, heads, q_len, page, dtype=torch.bfloat16, seed=0, fp8=False,
                fp8_q=False):
    """q [batch, q_len, heads, 576], a cache of shuffled pages and its block table."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    batch = len(seq_lens)
    pages_of = [max(1, -(-n // page)) for n in seq_lens]
    num_blocks = sum(pages_of) + 1  # the last block is owned by nobody
    order = torch.randperm(num_blocks - 1, generator=gen).tolist()
    width = max(pages_of) + 2       # engines keep wider tables than needed
    table = torch.full((batch, width), num_blocks - 1, dtype=torch.int32)
    used = 0
    for b, n in enumerate(pages_of):
        table[b, :n] = torch.tensor(order[used:used + n], dtype=torch.int32)
        used += n
    q = torch.randn(batch, q_len, heads, QK, generator=gen)
    q = (q / Q_SCALE).to(torch.float8_e4m3fn) if fp8_q else q.to(dtype)
    kv = torch.randn(num_blocks, page, QK, generator=gen)
    kv = (kv / KV_SCALE).to(torch.float8_e4m3fn) if fp8 else kv.to(dtype)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    return q.to(DEV), kv.to(DEV), table.to(DEV), lens.to(DEV)


def climb_logits(kv, table, seq_lens, page):
    """Scales each request's keys' last 64 columns (K's rope part; V is untouched)
    by 1 + 40 (key / n)^2, and by 200 at keys 700 + 1024 i and 840 + 1024 i:
    row maxima climb through a request, and the spikes move them by hundreds
    (log2 units) in tiles of both parities: rescale factors far from 1, and
    past the bounds of bench/probes/lazy-maxima.patch (2^8 jump, 2^32 lag)."""
    scaled = kv.float()
    for b, n in enumerate(seq_lens.tolist()):
        if n == 0:
            continue
        keys = torch.arange(n, device=DEV)
        mag = 1 + 40 * (keys / n) ** 2
        mag[(keys % 1024 == 700) | (keys % 1024 == 840)] = 200.0
        blocks, slots = table[b, keys // page].long(), keys % page
        scaled[blocks, slots, V:] *= mag[:, None]
    return scaled.to(kv.dtype)


def reference(q, kv, table, seq_lens, page, kv_scale=1.0, q_scale=1.0):
    """fp32 absorbed MLA decode: out [batch, q_len, heads, 512], lse [batch, q_len, heads]
    and the low-precision emulation's out (see ATOL). An fp8 cache is dequantised
    first: kv_scale * float(stored); fp8 q too (q_scale)."""
    batch, q_len, heads, _ = q.shape
    out = torch.zeros(batch, q_len, heads, V, device=DEV)
    emulated = torch.zeros_like(out)
    lse = torch.full((batch, q_len, heads), float("-inf"), device=DEV)
    p_dtype = torch.bfloat16 if q.dtype == torch.float8_e4m3fn else q.dtype  # out's
    for b, n in enumerate(seq_lens.tolist()):
        if n == 0:
            continue
        keys = torch.arange(n, device=DEV)
        rows = kv[table[b, keys // page].long(), keys % page].float() * kv_scale  # [n, 576]
        s = torch.einsum("thd,nd->thn", q[b].float() * q_scale, rows) * SCALE  # [q_len, heads, n]
        t = torch.arange(q_len, device=DEV)[:, None, None]
        s = s.masked_fill(keys[None, None, :] > n - q_len + t, float("-inf"))
        row_lse = torch.logsumexp(s, -1)
        p = torch.exp(s - row_lse[..., None]).nan_to_num(0.0)
        out[b] = torch.einsum("thn,nd->thd", p, rows[:, :V])
        lse[b] = row_lse
        un = torch.exp(s - s.amax(-1, keepdim=True)).nan_to_num(0.0)  # in (0, 1]
        o = torch.einsum("thn,nd->thd", un.to(p_dtype).float(), rows[:, :V])
        emulated[b] = (o / un.sum(-1, keepdim=True).clamp_min(1e-30)).to(p_dtype).float()
    return out, lse, emulated


def run(kernel, plan, q, kv, table, lens, with_lse=True, kv_scale=1.0, q_scale=1.0,
        whole_grid=False):
    plan.update(lens.cpu().tolist())
    if whole_grid:  # the launch is not told the plan's items: grid x = the most a
        plan.num_work = -1  # plan of this batch holds (as under graph capture)
    out_dtype = torch.bfloat16 if q.dtype == torch.float8_e4m3fn else q.dtype
    out = torch.full((*q.shape[:3], V), float("nan"), device=DEV, dtype=out_dtype)
    lse = torch.full(q.shape[:3], float("nan"), device=DEV) if with_lse else None
    kernel.decode(q, kv, out, table, lens, plan, SCALE, lse=lse, kv_scale=kv_scale,
                  q_scale=q_scale)
    return out, lse


def output_tolerance(ref_out, emu_err, dtype, atol=ATOL):
    """Per element: max(atol, 1.01 |ref - dtype(ref)|, 2 emu_err) (see ATOL)."""
    rounding = (ref_out - ref_out.to(dtype).float()).abs()
    return (ROUNDING_SLACK * rounding).clamp_min(max(atol, EMULATION_FACTOR * emu_err))


def compare(out, lse, ref_out, ref_lse, emu_out, atol=ATOL, lse_atol=0.0):
    """lse_atol: an LSE element also passes within this absolute error."""
    got = out.float()
    unwritten = int(torch.isnan(got).sum()) + int(torch.isnan(lse).sum())
    diff = (got - ref_out).abs()
    err = diff.max().item()
    emu_err = (emu_out - ref_out).abs().max().item() if ref_out.numel() else 0.0
    over_tolerance = int((~(diff <= output_tolerance(ref_out, emu_err, out.dtype, atol))).sum())  # NaN counts
    finite = torch.isfinite(ref_lse)
    same_inf = bool(torch.equal(torch.isinf(lse) & (lse < 0), ~finite))
    lse_diff = (lse[finite] - ref_lse[finite]).abs()
    lse_rel_all = lse_diff / ref_lse[finite].abs().clamp_min(LSE_FLOOR)
    lse_rel = lse_rel_all.max().item() if finite.any() else 0.0
    lse_abs = lse_diff.max().item() if finite.any() else 0.0
    lse_over = int((~((lse_rel_all <= LSE_RTOL) | (lse_diff <= lse_atol))).sum())  # NaN counts
    ok = unwritten == 0 and over_tolerance == 0 and lse_over == 0 and same_inf and math.isfinite(emu_err)
    return dict(max_abs_err=err, emulation_max_abs_err=emu_err, over_tolerance=over_tolerance,
                lse_max_rel_err=lse_rel, lse_max_abs_err=lse_abs, lse_over_tolerance=lse_over,
                unwritten=unwritten, empty_rows_lse_neg_inf=same_inf, ok=ok)


def numerics_case(rt, arch, heads, q_len, page, seq_lens, num_sms, dtype="bf16", fp8=False,
                  fp8_q=False, spread_rows=False, climb=False, tile_q=0, row_logits=False,
                  engine_buffers=False):
    sig = signature(arch, heads, q_len, page, dtype, kv="fp8e4m3" if fp8 else None,
                    q="fp8e4m3" if fp8_q else None, tile_q=tile_q)
    kernel = rt.kernel(sig)
    tdtype = torch.bfloat16 if dtype == "bf16" else torch.float16
    q, kv, table, lens = make_inputs(seq_lens, heads, q_len, page, tdtype,
                                     seed=heads * 100 + q_len * 10 + page, fp8=fp8, fp8_q=fp8_q)
    if spread_rows:  # q rows of magnitudes 2^-6 .. 2^3 (each its own split scale)
        q = q * (2.0 ** (torch.arange(heads, device=DEV) % 10 - 6)).to(q.dtype).view(1, 1, heads, 1)
    if climb:
        kv = climb_logits(kv, table, lens, page)
    kv_scale = KV_SCALE if fp8 else 1.0
    if row_logits:  # key 0 of each request at logit -80 .. 20 across the rows (see main)
        logits = torch.linspace(-80, 20, heads, device=DEV)
        for b in range(len(seq_lens)):
            k0 = kv[table[b, 0].long(), 0].float() * kv_scale
            q[b, :] = (logits[:, None] * k0 / (SCALE * k0.dot(k0))).to(q.dtype)
    q_scale = Q_SCALE if fp8_q else 1.0
    # engine_buffers: planned on buffers for 256 requests, as an engine's are,
    # so the work list holds many more items than the step.
    plan = mlagen.DecodePlan(kernel, max_batch=256 if engine_buffers else len(seq_lens),
                             num_sms=num_sms)
    out, lse = run(kernel, plan, q, kv, table, lens, kv_scale=kv_scale, q_scale=q_scale)
    work_items = plan.num_work
    # Without lse the kernels must skip that write and still produce out.
    out_no_lse, _ = run(kernel, plan, q, kv, table, lens, with_lse=False, kv_scale=kv_scale,
                        q_scale=q_scale)
    torch.cuda.synchronize()
    # e4m3 products (see FP8_PRODUCTS_ATOL): fp8 q, or bf16 q in 16-row blocks.
    products = fp8 and arch == "sm_90a" and (fp8_q or (tile_q or heads * q_len) <= 16)
    seesaw = fp8_q and arch == "sm_90a" and (tile_q or heads * q_len) > 32
    r = compare(out, lse, *reference(q, kv, table, lens, page, kv_scale, q_scale),
                atol=FP8_PRODUCTS_ATOL if products else CLIMB_ATOL if climb else ATOL,
                lse_atol=FP8_SEESAW_LSE_ATOL if seesaw else FP8_PRODUCTS_LSE_ATOL if products else 0.0)
    r["same_out_without_lse"] = bool(torch.equal(out, out_no_lse))
    r["ok"] = r["ok"] and r["same_out_without_lse"]
    if engine_buffers:
        # The grid sized to the plan's items (kernel.decode passes them) and
        # the one a launch that does not know them takes (the most items a
        # plan of this batch holds, as under graph capture) give the same bits.
        whole, whole_lse = run(kernel, plan, q, kv, table, lens, kv_scale=kv_scale,
                               q_scale=q_scale, whole_grid=True)
        torch.cuda.synchronize()
        r["work_capacity"] = plan.work_capacity
        r["same_bits_items_unknown"] = bool(torch.equal(out, whole) and torch.equal(lse, whole_lse))
        r["ok"] = r["ok"] and r["same_bits_items_unknown"] and work_items < plan.work_capacity
    case = "engine_buffers" if engine_buffers else "row_logits" if row_logits else "numerics"
    return dict(case=case, signature=sig, seq_lens=seq_lens, num_sms=num_sms,
                work_items=work_items, **r)


def graph_case(rt, arch, heads=16, batch=8, max_batch=None, short_keys=200):
    """One capture, replayed after plan.update() with new lengths: equal to eager.
    The capture's plan splits nothing (an eager step would skip the reduce);
    the replays' plans split, so the captured reduce must be there. With
    max_batch above batch (an engine's buffers) the captured grid is the most
    items a plan of `batch` requests holds, not the work list's capacity, and
    the replays' plans come near that bound."""
    q_len, page = 1, 64
    name = f"graph H{heads} B{batch}" + (f" max_batch {max_batch}" if max_batch else "")
    kernel = rt.kernel(signature(arch, heads, q_len, page))
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = mlagen.DecodePlan(kernel, max_batch=max_batch or batch, num_sms=num_sms)
    rng = random.Random(3)
    steps = [[rng.randint(1, 16384) for _ in range(batch)] for _ in range(3)]
    longest = max(max(s) for s in steps)
    q, kv, table, _ = make_inputs([longest] * batch, heads, q_len, page, seed=11)
    lens = torch.zeros(batch, dtype=torch.int32, device=DEV)
    out = torch.zeros(batch, q_len, heads, V, dtype=q.dtype, device=DEV)
    lse = torch.zeros(batch, q_len, heads, device=DEV)

    short = [rng.randint(1, short_keys) for _ in range(batch)]
    lens.copy_(torch.tensor(short, dtype=torch.int32))
    plan.update(short)
    capture_slots = plan.slots
    kernel.decode(q, kv, out, table, lens, plan, SCALE, lse=lse)  # warm-up
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel.decode(q, kv, out, table, lens, plan, SCALE, lse=lse)
    results = [dict(case=name, seq_lens=short, capture_plan_slots=capture_slots,
                    ok=capture_slots == 0)]
    for step in steps:
        lens.copy_(torch.tensor(step, dtype=torch.int32))
        plan.update(step)
        graph.replay()
        torch.cuda.synchronize()
        replayed, replayed_lse = out.clone(), lse.clone()
        eager, eager_lse = run(kernel, plan, q, kv, table, lens)
        torch.cuda.synchronize()
        r = compare(replayed, replayed_lse, *reference(q, kv, table, lens, page))
        bitwise = bool(torch.equal(replayed, eager) and torch.equal(replayed_lse, eager_lse))
        r["ok"] = r["ok"] and bitwise
        results.append(dict(case=name, seq_lens=step, replay_equals_eager=bitwise,
                            work_items=plan.num_work, plan_slots=plan.slots, **r))
    # Replays with no plan copy between them give the same bits (the plan
    # on the device is only read).
    out.zero_()
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    same = bool(torch.equal(out, eager) and torch.equal(lse, eager_lse))
    results.append(dict(case=name, seq_lens=steps[-1], replays_without_update_equal=same,
                        work_items=plan.num_work, ok=same))
    return results


def checked_case(rt, arch, num_sms, bad, q_len=1, page=64):
    """Checked mode: request 3 of a ragged batch is bad (bad="seq_len": longer
    than its block-table row holds; bad="page": a table entry past the cache;
    bad=None: nothing wrong). The step must not crash, request 3 must get zeros
    and LSE -inf, the others their fp32-reference answers (and, where the plan
    is unchanged, the unchecked run's exact bits), and plan.check()
    must raise mlagen.Error with the message naming request 3 (or, when
    nothing is wrong, not raise and change nothing)."""
    heads, victim = 16, 3
    seq_lens = [1, 17, 300, 4096, 16384, 64, 2, 1000]
    kernel = rt.kernel(signature(arch, heads, q_len, page))
    q, kv, table, lens = make_inputs(seq_lens, heads, q_len, page, seed=31)
    num_blocks, width = kv.shape[0], table.shape[1]
    bad_lens = list(seq_lens)
    if bad == "seq_len":
        bad_lens[victim] = width * page + 5
        expected = (f"request {victim}: seq_len {bad_lens[victim]} needs {width + 1} pages of "
                    f"{page} keys, block table has {width}")
    elif bad == "page":
        table[victim, 1] = num_blocks + 9999
        expected = (f"request {victim}: block table entry {num_blocks + 9999} (page 1) is "
                    f"outside the cache ({num_blocks} blocks)")
    else:
        expected = None
    plan = mlagen.DecodePlan(kernel, max_batch=len(seq_lens), num_sms=num_sms)
    good_lens = torch.tensor(seq_lens, dtype=torch.int32, device=DEV)
    ref_out, ref_lse = run(kernel, plan, q, kv, table.clamp_max(num_blocks - 1), good_lens)
    torch.cuda.synchronize()
    plan.update(bad_lens)
    out = torch.full((*q.shape[:3], V), float("nan"), device=DEV, dtype=q.dtype)
    lse = torch.full(q.shape[:3], float("nan"), device=DEV)
    kernel.decode(q, kv, out, table, torch.tensor(bad_lens, dtype=torch.int32, device=DEV),
                  plan, SCALE, lse=lse, checked=True)
    torch.cuda.synchronize()
    message = None
    try:
        plan.check()
    except mlagen.Error as e:
        message = e.message
    others = [b for b in range(len(seq_lens)) if b != victim or bad is None]
    # The other requests: within the numerics rule of the fp32 reference, and
    # bit-identical to the unchecked run when the plan is the same (a longer
    # seq_len re-chunks every request, which changes the summation order).
    good_table = table.clamp_max(num_blocks - 1)
    fp32_out, fp32_lse, emu_out = reference(q, kv, good_table, good_lens, page)
    others_close = compare(out[others], lse[others], fp32_out[others], fp32_lse[others],
                           emu_out[others])["ok"]
    others_equal = others_close and (bad == "seq_len" or bool(
        torch.equal(out[others], ref_out[others]) and torch.equal(lse[others], ref_lse[others])))
    victim_zero = True if bad is None else bool(
        torch.equal(out[victim].float(), torch.zeros_like(out[victim].float())) and
        bool((lse[victim] == float("-inf")).all()))
    cleared = int(plan.error_flags.abs().sum()) == 0
    ok = message == expected and others_equal and victim_zero and cleared
    return dict(case=f"checked-{bad or 'valid'}", signature=kernel.signature,
                seq_lens=bad_lens, num_sms=num_sms, work_items=plan.num_work,
                message=message, expected=expected, others_within_tolerance=others_close,
                others_ok=others_equal,
                bad_request_zeros_neg_inf_lse=victim_zero, flags_cleared=cleared, ok=ok)


def invariance_case(rt, arch):
    """A request's bits with a batch-invariant kernel: alone, then inside other
    batches planned for other SM counts."""
    heads, q_len, page = 16, 1, 64
    kernel = rt.kernel(signature(arch, heads, q_len, page, batch_invariant=True))
    target = 5000
    q1, kv1, table1, lens1 = make_inputs([target], heads, q_len, page, seed=21)
    plan = mlagen.DecodePlan(kernel, max_batch=1, num_sms=132, max_seq_len=16384)
    alone, alone_lse = run(kernel, plan, q1, kv1, table1, lens1)
    torch.cuda.synchronize()
    base = compare(alone, alone_lse, *reference(q1, kv1, table1, lens1, page))
    results = [dict(case="invariance-alone", seq_lens=[target], **base)]
    rng = random.Random(5)
    for batch, num_sms in ((2, 1), (37, 132), (64, 1000)):
        others = [rng.randint(0, 16384) for _ in range(batch - 1)]
        slot = rng.randrange(batch)
        seq_lens = others[:slot] + [target] + others[slot:]
        q, kv, table, lens = make_inputs(seq_lens, heads, q_len, page, seed=batch)
        # The request under test gets the same q and the same keys.
        q[slot] = q1[0]
        pages = -(-target // page)
        kv[table[slot, :pages].long()] = kv1[table1[0, :pages].long()]
        plan = mlagen.DecodePlan(kernel, max_batch=batch, num_sms=num_sms, max_seq_len=16384)
        out, lse = run(kernel, plan, q, kv, table, lens)
        torch.cuda.synchronize()
        bitwise = bool(torch.equal(out[slot], alone[0]) and torch.equal(lse[slot], alone_lse[0]))
        results.append(dict(case="invariance", seq_lens=f"{batch} requests, target at {slot}",
                            num_sms=num_sms, work_items=plan.num_work, bitwise_equal=bitwise,
                            ok=bitwise))
    return results


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    ragged = [1, 17, 300, 4096, 16384, 64, 2, 1000]
    results = []

    def report(r):
        results.append(r)
        errs = (f"err={r['max_abs_err']:.2e} emu_err={r['emulation_max_abs_err']:.2e} "
                f"over_tol={r['over_tolerance']} "
                f"lse_rel={r['lse_max_rel_err']:.2e} lse_abs={r['lse_max_abs_err']:.2e} "
                f"unwritten={r['unwritten']}"
                if "max_abs_err" in r else "")
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['case']} {r.get('signature', '')} "
              f"lens={r['seq_lens']} sms={r.get('num_sms', '')} work={r.get('work_items', '')} "
              f"{errs}", flush=True)

    for heads in (1, 8, 16, 128):
        for q_len in (1, 4):
            for page in (1, 16, 64):
                report(numerics_case(rt, arch, heads, q_len, page, ragged, num_sms))
    # Plans that split nothing (one SM) and split much (many SMs); empty and
    # short requests (q_len 4 with fewer keys than tokens); fp16.
    report(numerics_case(rt, arch, 16, 1, 64, ragged, 1))
    report(numerics_case(rt, arch, 128, 1, 64, [16384, 3], 4096))
    # 32 requests at 128 heads, all split for 4096 SMs: a reduce of 32 x 43
    # row blocks.
    report(numerics_case(rt, arch, 128, 1, 64, [3000] * 24 + ragged, 4096))
    report(numerics_case(rt, arch, 16, 4, 16, [0, 1, 3, 4, 5, 0], num_sms))
    report(numerics_case(rt, arch, 16, 1, 64, ragged, num_sms, dtype="fp16"))
    # 16 heads, every cache and q type: 32 x 4096 keys on the device's SMs
    # (four chunks each, the reduce), and one step mixing pairs merged in
    # clusters (sm_90a) with a request of three chunks, planned for 8 SMs.
    for kinds in (dict(), dict(fp8=True), dict(fp8=True, fp8_q=True)):
        report(numerics_case(rt, arch, 16, 1, 64, [4096] * 32, num_sms, **kinds))
        report(numerics_case(rt, arch, 16, 1, 64, [3000, 2900, 1000, 2048, 4096, 0], 8, **kinds))
    # Small steps (sm_90a: chunks of one or two tiles while they fill at
    # most half the SMs, DecodePlanner::smallStepChunkKeysFor): one request of 4096
    # keys, and two of 1024 and 700, at 16 and 128 heads, every cache and q
    # type.
    for heads in (16, 128):
        for kinds in (dict(), dict(fp8=True), dict(fp8=True, fp8_q=True)):
            for lens in ([4096], [1024, 700]):
                report(numerics_case(rt, arch, heads, 1, 64, lens, num_sms, **kinds))
    # Small steps on an engine's buffers (max_batch 256): the launch's grid
    # covers only the plan's items (plan_work), and the whole work list's
    # grid gives the same bits. Also 4 row blocks an item (16 heads, q_len
    # 4, page 16), whose blocks are numbered across grid x.
    for heads in (16, 128):
        for kinds in (dict(), dict(fp8=True), dict(fp8=True, fp8_q=True)):
            report(numerics_case(rt, arch, heads, 1, 64, [4096], num_sms, engine_buffers=True,
                                 **kinds))
    report(numerics_case(rt, arch, 16, 4, 16, ragged, num_sms, engine_buffers=True))
    report(numerics_case(rt, arch, 128, 1, 64, [1024, 700, 1], num_sms, engine_buffers=True))
    # Row maxima that climb and jump (climb_logits), on plans that split
    # requests (the device's SMs) and that split none (one SM).
    for heads, q_len, dtype in ((128, 1, "bf16"), (128, 4, "bf16"), (64, 1, "bf16"), (16, 1, "bf16"),
                                (128, 1, "fp16")):
        for sms in (num_sms, 1):
            report(numerics_case(rt, arch, heads, q_len, 64, [4096, 3000, 777, 64, 1, 2200], sms,
                                 dtype=dtype, climb=True))
    # fp8 e4m3 cache, bf16 q and out.
    for heads in (16, 128):
        for q_len in (1, 4):
            for page in (1, 64):
                report(numerics_case(rt, arch, heads, q_len, page, ragged, num_sms, fp8=True))
        report(numerics_case(rt, arch, heads, 1, 64, ragged, num_sms, fp8=True, spread_rows=True))
    # 32 rows a request (one draft token at 16 heads; 32 heads).
    for heads, q_len, page in ((16, 2, 1), (16, 2, 64), (32, 1, 64)):
        report(numerics_case(rt, arch, heads, q_len, page, ragged, num_sms, fp8=True))
    report(numerics_case(rt, arch, 32, 1, 64, ragged, num_sms, fp8=True, spread_rows=True))
    # Rows whose logits are all negative, in every row tile of a block: a
    # row's running max must start at -inf (CUDA 13.0 started the rows of
    # all but the first row tile of the sm_80 kernel at 0, and fp16 P
    # underflowed; RowState in templates/kernels/mla_decode.hip).
    for heads in (32, 128):
        report(numerics_case(rt, arch, heads, 1, 64, [1, 40, 300], num_sms, fp8=True, row_logits=True))
        report(numerics_case(rt, arch, heads, 1, 64, [1, 40, 300], num_sms, dtype="fp16",
                             row_logits=True))
    # The same rows on sm_90a's e4m3 products: 16 rows of bf16 q (split into
    # e4m3 hi + lo) and of fp8 q; fp8 q at 128 heads in 64-row blocks (the
    # seesaw) and pinned to 32. Key 0 and q are parallel there, so a logit is
    # a sum of like-signed terms, which the tensor cores' e4m3 sums truncate
    # step after step (split q over two accumulators: LSE off by 0.16 at
    # logits of 80; over six, as now, 2.8e-2, 4.9e-4 relative).
    for heads, fp8_q, tile_q in ((16, False, 0), (16, True, 0), (128, True, 0), (128, True, 32)):
        report(numerics_case(rt, arch, heads, 1, 64, [1, 40, 300], num_sms, fp8=True, fp8_q=fp8_q,
                             tile_q=tile_q, row_logits=True))
    # Pinned smaller blocks (tile_q): 32 rows in 16-row e4m3 blocks, 128 heads
    # in 32-row blocks.
    report(numerics_case(rt, arch, 16, 2, 64, ragged, num_sms, fp8=True, tile_q=16))
    report(numerics_case(rt, arch, 128, 1, 64, ragged, num_sms, tile_q=32))
    # fp8 e4m3 q and cache, bf16 out.
    for heads in (16, 128):
        for q_len in (1, 4):
            for page in (1, 64):
                report(numerics_case(rt, arch, heads, q_len, page, ragged, num_sms, fp8=True,
                                     fp8_q=True))
    for r in graph_case(rt, arch):
        report(r)
    # On an engine's buffers (max_batch 256): 128 heads B2, 16 heads B3.
    for heads, batch in ((128, 2), (16, 3)):
        for r in graph_case(rt, arch, heads, batch, max_batch=256, short_keys=100):
            report(r)
    for r in invariance_case(rt, arch):
        report(r)
    # Checked mode: valid input, seq_len past the table, a page past the cache
    # (split plans, so the reduce sees the bad request's empty slots too).
    for bad in (None, "seq_len", "page"):
        report(checked_case(rt, arch, num_sms, bad))
    report(checked_case(rt, arch, num_sms, "page", q_len=4, page=16))

    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "decode_numerics.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend,
                       tolerance=f"|got - ref| <= max({ATOL}, {ROUNDING_SLACK} |ref - dtype(ref)|, "
                                 f"{EMULATION_FACTOR} max |emulation - ref|)",
                       lse_rtol=LSE_RTOL,
                       fp8_products=f"e4m3 products on sm_90a: output atol {FP8_PRODUCTS_ATOL}, "
                                    f"LSE also within {FP8_PRODUCTS_LSE_ATOL} absolute",
                       results=results), f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
