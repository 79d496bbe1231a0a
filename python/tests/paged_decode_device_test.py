"""Paged GQA decode (mla.paged_decode) on a GPU: numerics against an fp32
reference (fp8 caches dequantised with their k and v scales) and, for bf16,
against PyTorch SDPA (enable_gqa); a CUDA graph captured once and replayed
after plan.update() with new lengths equals eager.

Shapes: hq/hkv 32/8 d128, 8/1 d64, 16/8 d256, 16/4 d80, 16/4 d96, 8/2 d32;
pages 16 and 64 in a shuffled cache; ragged seq_lens with 1 and 16384;
q_len 1 and 4; window -1 and 256; soft cap 0 and 30; bf16 and fp8. ALiBi
(alibi=1, slopes 2^(-8 (h + 1) / hq) as prefill_device_test.py's): 32/8 d128
and 8/1 d64, pages 16 and 64, q_len 1 and 4, window -1 and 256, bf16 and fp8,
plus MPT-7B's 32/32 d128; the binding's slope checks.

Writes paged_decode_numerics.json under $OUT (or /tmp). Exit 1 on any failure.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

import mlagen

ATOL = 1e-2          # per element: max(ATOL, 1.01 x the bf16 rounding of the reference)
ROUNDING_SLACK = 1.01
LSE_TOL = 1e-3       # of max(1, |lse|)
K_SCALE, V_SCALE = 0.0625, 0.03125  # fp8: caches store randn / scale
DEV = "cuda"


def signature(arch, hq, hkv, d, q_len, page, window, softcap, kv, alibi=False):
    return (f"paged_decode hq={hq} hkv={hkv} v={d} q_len={q_len} page={page} window={window} "
            f"softcap={softcap} alibi={int(alibi)} lse=1 q=bf16 kv={kv} out=bf16 arch={arch}")


def alibi_slopes(heads):
    """vLLM's (and the ALiBi paper's) slopes: 2^(-8 (h + 1) / H) for H a power of
    two, else those of the power below plus every other one of twice it."""
    n = 2 ** math.floor(math.log2(heads))
    slopes = [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    slopes += [2.0 ** (-4.0 * (2 * h + 1) / n) for h in range(heads - n)]
    return torch.tensor(slopes, dtype=torch.float32)


def fp8_dtype(arch):
    return torch.float8_e4m3fnuz if arch == "gfx942" else torch.float8_e4m3fn


def make_inputs(seq_lens, hq, hkv, d, q_len, page, fp8, arch, seed):
    """q, K/V caches of shuffled pages (vLLM's [2, blocks, page, hkv, d] unbound),
    the block table, and the dequantised caches as fp32 for the reference."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    batch = len(seq_lens)
    pages_of = [max(1, -(-n // page)) for n in seq_lens]
    num_blocks = sum(pages_of) + 1
    order = torch.randperm(num_blocks - 1, generator=gen).tolist()
    width = max(pages_of) + 2
    table = torch.full((batch, width), num_blocks - 1, dtype=torch.int32)
    at = 0
    for b, n in enumerate(pages_of):
        table[b, :n] = torch.tensor(order[at:at + n], dtype=torch.int32)
        at += n
    q = torch.randn(batch, q_len, hq, d, generator=gen).to(torch.bfloat16)
    kv = torch.randn(2, num_blocks, page, hkv, d, generator=gen)
    if fp8:
        kv[0] /= K_SCALE
        kv[1] /= V_SCALE
        stored = kv.to(DEV).to(fp8_dtype(arch))
        ref = stored.float().cpu()
        ref[0] *= K_SCALE
        ref[1] *= V_SCALE
    else:
        stored = kv.to(torch.bfloat16).to(DEV)
        ref = stored.float().cpu()
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    return q.to(DEV), stored, table.to(DEV), lens.to(DEV), ref


def gather(ref_cache, table, b, n, page):
    """Keys [0, n) of request b as [n, hkv, d] from a [blocks, page, hkv, d] cache."""
    pages = table[b, :max(1, -(-n // page))].long().cpu()
    return ref_cache[pages].reshape(-1, *ref_cache.shape[2:])[:n]


def reference(q, ref, table, seq_lens, page, scale, window, softcap, slopes=None):
    """fp32 out [batch, q_len, hq, d] and natural-log LSE [batch, q_len, hq];
    slopes: ALiBi's -slope[h] * |pos - key| added in fp32 after the cap."""
    batch, q_len, hq, d = q.shape
    hkv = ref.shape[3]
    out = torch.zeros(batch, q_len, hq, d)
    lse = torch.full((batch, q_len, hq), -math.inf)
    qf = q.float().cpu()
    for b, n in enumerate(seq_lens):
        if n == 0:
            continue
        k = gather(ref[0], table, b, n, page).repeat_interleave(hq // hkv, dim=1)  # [n, hq, d]
        v = gather(ref[1], table, b, n, page).repeat_interleave(hq // hkv, dim=1)
        logits = torch.einsum("thd,nhd->thn", qf[b], k) * scale
        if softcap > 0:
            logits = softcap * torch.tanh(logits / softcap)
        keys = torch.arange(n)
        for t in range(q_len):
            pos = n - q_len + t
            if slopes is not None:
                logits[t] -= slopes[:, None] * (pos - keys).abs().float()[None, :]
            masked = keys > pos
            if window >= 0:
                masked |= keys < pos - window
            logits[t][:, masked] = -math.inf
        l = torch.logsumexp(logits, dim=-1)  # [q_len, hq]
        p = torch.exp(logits - l.clamp_min(-1e30)[..., None])
        p = torch.nan_to_num(p, nan=0.0)
        out[b] = torch.einsum("thn,nhd->thd", p, v)
        lse[b] = l
    return out, lse


def sdpa_reference(q, ref, table, seq_lens, page, scale):
    """PyTorch SDPA (enable_gqa) on bf16 inputs, q_len-causal by an explicit mask."""
    batch, q_len, hq, d = q.shape
    outs = torch.zeros(batch, q_len, hq, d, device=DEV)
    for b, n in enumerate(seq_lens):
        if n == 0:
            continue
        k = gather(ref[0], table, b, n, page).to(DEV).to(torch.bfloat16).transpose(0, 1)[None]
        v = gather(ref[1], table, b, n, page).to(DEV).to(torch.bfloat16).transpose(0, 1)[None]
        mask = (torch.arange(n, device=DEV)[None, :] <=
                (n - q_len + torch.arange(q_len, device=DEV))[:, None])
        o = F.scaled_dot_product_attention(q[b].transpose(0, 1)[None], k, v, attn_mask=mask,
                                           scale=scale, enable_gqa=True)
        outs[b] = o[0].transpose(0, 1).float()
    return outs


def output_tolerance(ref_out):
    rounding = (ref_out - ref_out.to(torch.bfloat16).float()).abs()
    return (ROUNDING_SLACK * rounding).clamp_min(ATOL)


def compare(out, lse, ref_out, ref_lse):
    got = out.float().cpu()
    lse = lse.cpu()
    unwritten = int(torch.isnan(got).sum()) + int(torch.isnan(lse).sum())
    diff = (got - ref_out).abs()
    over = int((~(diff <= output_tolerance(ref_out))).sum())
    finite = torch.isfinite(ref_lse)
    same_inf = bool(torch.equal(torch.isinf(lse) & (lse < 0), ~finite))
    lse_err = ((lse[finite] - ref_lse[finite]).abs() /
               ref_lse[finite].abs().clamp_min(1.0)).max().item() if finite.any() else 0.0
    ok = unwritten == 0 and over == 0 and lse_err <= LSE_TOL and same_inf
    return dict(max_abs_err=diff.max().item(), over_tolerance=over, lse_err=lse_err,
                unwritten=unwritten, empty_rows_lse_neg_inf=same_inf, ok=ok)


def run(kernel, plan, q, stored, table, lens, scale, scales, slopes=None):
    plan.update(lens.cpu().tolist())
    out = torch.full(q.shape, float("nan"), device=DEV, dtype=torch.bfloat16)
    lse = torch.full(q.shape[:3], float("nan"), device=DEV)
    kernel.paged_decode(q, stored[0], stored[1], out, table, lens, plan, scale, lse=lse,
                        k_scale=scales[0], v_scale=scales[1], alibi_slopes=slopes)
    return out, lse


def numerics_case(rt, arch, num_sms, hq, hkv, d, q_len, page, window, softcap, fp8, lens,
                  alibi=False):
    sig = signature(arch, hq, hkv, d, q_len, page, window, softcap, "fp8e4m3" if fp8 else "bf16",
                    alibi)
    kernel = rt.kernel(sig)
    q, stored, table, dlens, ref = make_inputs(lens, hq, hkv, d, q_len, page, fp8, arch,
                                               seed=hq * 1000 + d * 10 + q_len + page)
    scale = 1.0 / math.sqrt(d)
    scales = ((torch.tensor([K_SCALE], device=DEV), torch.tensor([V_SCALE], device=DEV))
              if fp8 else (None, None))
    slopes = alibi_slopes(hq) if alibi else None
    plan = mlagen.DecodePlan(kernel, max_batch=len(lens), num_sms=num_sms)
    out, lse = run(kernel, plan, q, stored, table, dlens, scale, scales,
                   slopes.to(DEV) if alibi else None)
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(q, ref, table, lens, page, scale, window, softcap, slopes)
    result = dict(case="numerics", signature=sig, seq_lens=lens, work_items=plan.num_work,
                  **compare(out, lse, ref_out, ref_lse))
    if not fp8 and window < 0 and softcap == 0 and not alibi:
        sdpa = sdpa_reference(q, ref, table, lens, page, scale).cpu()
        # Rows that see at least one key (token t sees keys [0, n - q_len + t]);
        # SDPA's output for a row whose mask is all False is not defined.
        q_len = q.shape[1]
        nonempty = torch.tensor([[n - q_len + t >= 0 for t in range(q_len)] for n in lens])
        sdpa_err = (out.float().cpu() - sdpa)[nonempty].abs().max().item()
        # Both round to bf16 once: within two bf16 roundings of each other.
        sdpa_ok = bool(((out.float().cpu() - sdpa)[nonempty].abs() <=
                        2 * output_tolerance(sdpa[nonempty])).all())
        result.update(sdpa_max_abs_err=sdpa_err, sdpa_ok=sdpa_ok)
        result["ok"] = result["ok"] and sdpa_ok
    return result


def graph_case(rt, arch, num_sms):
    """Capture once, replay after plan.update with new lengths: equals eager."""
    hq, hkv, d, q_len, page = 32, 8, 128, 1, 16
    sig = signature(arch, hq, hkv, d, q_len, page, -1, 0, "bf16")
    kernel = rt.kernel(sig)
    first, second = [4096, 1, 300, 16384], [17, 8000, 2, 1024]
    longest = [max(a, b) for a, b in zip(first, second)]
    q, stored, table, lens, _ = make_inputs(longest, hq, hkv, d, q_len, page, False, arch, 7)
    plan = mlagen.DecodePlan(kernel, max_batch=len(first), num_sms=num_sms)
    out = torch.zeros(q.shape, device=DEV, dtype=torch.bfloat16)
    lse = torch.zeros(q.shape[:3], device=DEV)
    scale = 1.0 / math.sqrt(d)
    dev_lens = torch.tensor(first, dtype=torch.int32, device=DEV)
    plan.update(first)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kernel.paged_decode(q, stored[0], stored[1], out, table, dev_lens, plan, scale, lse=lse)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel.paged_decode(q, stored[0], stored[1], out, table, dev_lens, plan, scale, lse=lse)
    results = []
    for step in (first, second):
        dev_lens.copy_(torch.tensor(step, dtype=torch.int32))
        plan.update(step)
        graph.replay()
        torch.cuda.synchronize()
        replayed = (out.clone(), lse.clone())
        eager = run(kernel, plan, q, stored, table, dev_lens, scale, (None, None))
        torch.cuda.synchronize()
        same = bool(torch.equal(replayed[0], eager[0]) and torch.equal(replayed[1], eager[1]))
        results.append(dict(case="cuda_graph", signature=sig, seq_lens=step,
                            work_items=plan.num_work, ok=same))
    return results


def alibi_binding_cases(rt, arch, num_sms):
    """kernel.paged_decode's slope checks, each raising before any launch."""
    hq, hkv, d = 32, 32, 128
    alibi = rt.kernel(signature(arch, hq, hkv, d, 1, 16, -1, 0, "bf16", True))
    plain = rt.kernel(signature(arch, hq, hkv, d, 1, 16, -1, 0, "bf16"))
    q, stored, table, lens, _ = make_inputs([5, 40], hq, hkv, d, 1, 16, False, arch, 3)
    slopes = alibi_slopes(hq).to(DEV)

    def call(kernel, s):
        plan = mlagen.DecodePlan(kernel, max_batch=2, num_sms=num_sms)
        plan.update([5, 40])
        out = torch.empty_like(q)
        kernel.paged_decode(q, stored[0], stored[1], out, table, lens, plan, 0.1,
                            alibi_slopes=s)

    cases = [
        (lambda: call(alibi, None), "alibi_slopes is required"),
        (lambda: call(alibi, slopes[:16]), "[hq=32]"),
        (lambda: call(alibi, slopes.double()), "alibi_slopes must be torch.float32"),
        (lambda: call(alibi, slopes.cpu()), "alibi_slopes must be on the GPU"),
        (lambda: call(alibi, slopes.view(4, 8)), "alibi_slopes must be 1-d"),
        (lambda: call(alibi, torch.stack([slopes, slopes], 1)[:, 0]), "contiguous"),
        (lambda: call(plain, slopes), "alibi_slopes given, but the kernel's signature says alibi=0"),
    ]
    results = []
    for fn, expected in cases:
        try:
            fn()
            ok, message = False, "no error"
        except ValueError as e:
            ok, message = expected in str(e), str(e)
        results.append(dict(case="alibi_binding", signature=expected, seq_lens=[5, 40],
                            message=message, ok=ok))
    return results


def main():
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    ragged = [1, 17, 300, 4096, 16384, 64, 2, 1000]
    shapes = [(32, 8, 128), (8, 1, 64), (16, 8, 256), (16, 4, 80), (16, 4, 96), (8, 2, 32)]
    results = []

    def report(r):
        results.append(r)
        extra = (f"err={r['max_abs_err']:.2e} over={r['over_tolerance']} "
                 f"lse_err={r['lse_err']:.2e} unwritten={r['unwritten']} "
                 f"sdpa_err={r.get('sdpa_max_abs_err', float('nan')):.2e}"
                 if "max_abs_err" in r else "")
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['case']} {r['signature']} lens={r['seq_lens']} "
              f"work={r.get('work_items', '')} {extra}", flush=True)

    for hq, hkv, d in shapes:
        for q_len in (1, 4):
            for page in (16, 64):
                for fp8 in (False, True):
                    if fp8 and d % 16:
                        continue  # fp8 rows are 16-byte vectors of 16 elements
                    report(numerics_case(rt, arch, num_sms, hq, hkv, d, q_len, page, -1, 0,
                                         fp8, ragged))
        for window, softcap in ((256, 0), (-1, 30), (256, 30)):
            for fp8 in (False, True):
                if fp8 and d % 16:
                    continue
                report(numerics_case(rt, arch, num_sms, hq, hkv, d, 4, 16, window, softcap,
                                     fp8, ragged))
    # ALiBi: Llama-3-8B's and a one-kv-head shape, then MPT-7B's (32 / 32).
    for hq, hkv, d in ((32, 8, 128), (8, 1, 64)):
        for q_len in (1, 4):
            for page in (16, 64):
                for window in (-1, 256):
                    for fp8 in (False, True):
                        report(numerics_case(rt, arch, num_sms, hq, hkv, d, q_len, page, window,
                                             0, fp8, ragged, alibi=True))
    report(numerics_case(rt, arch, num_sms, 32, 32, 128, 1, 16, -1, 0, False, ragged, alibi=True))
    report(numerics_case(rt, arch, num_sms, 32, 8, 128, 4, 16, 256, 30, False, ragged, alibi=True))
    for r in alibi_binding_cases(rt, arch, num_sms):
        report(r)
    # A batch of one request per length, and an empty request.
    report(numerics_case(rt, arch, num_sms, 32, 8, 128, 1, 16, -1, 0, False, [0, 1, 5]))
    for r in graph_case(rt, arch, num_sms):
        report(r)

    failed = sum(not r["ok"] for r in results)
    print(f"{len(results) - failed}/{len(results)} passed", flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "paged_decode_numerics.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend,
                       results=results), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
