"""Prefill numerics on the GPU: mlagen against an fp32 reference and PyTorch SDPA.

Run on a CUDA machine:  PYTHONPATH=python python3 python/tests/prefill_device_test.py [FILTER]
FILTER (optional) runs only the cases whose signature contains it (e.g. "alibi=1").
Writes prefill_numerics.json under $OUT (or /tmp). Exit status 1 on any failure.
Besides the MLA grid: GQA models (Llama-3-8B, head dims 64..256), ALiBi
(FlashAttention's bias -slope * |i + sk - sq - j|, added after the soft cap),
Gemma-2-style soft cap 50 with sliding windows, and the binding's input checks.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

import mlagen

# An output passes when max |got - ref| <= max(ATOL, 2 x the error of a
# low-precision emulation of the same attention (FlashAttention's own test
# rule): P = exp(s - rowmax) rounded to the input dtype before P.V, output
# rounded. Rows whose weight sits on a few keys (few visible keys, ALiBi's
# decay) carry P's rounding, which no bf16 kernel avoids.
ATOL = 1e-2      # bf16 inputs of unit-normal scale
EMULATION_FACTOR = 2.0
LSE_RTOL = 1e-3  # of max(1, |lse|): LSEs near 0 are held to 1e-3 absolute


def visible(sq, sk, causal, window, device):
    """[sq, sk] bool: FlashAttention's bottom-right aligned causal and window."""
    i = torch.arange(sq, device=device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=device)[None, :]
    ok = torch.ones(sq, sk, dtype=torch.bool, device=device)
    left, right = window
    if causal:
        ok &= j <= i
    if left >= 0:
        ok &= j >= i - left
    if right >= 0:
        ok &= j <= i + right
    return ok


def alibi_slopes(heads):
    """vLLM's (and the ALiBi paper's) slopes: 2^(-8 (h + 1) / H) for H a power of
    two, else those of the power below plus every other one of twice it."""
    n = 2 ** math.floor(math.log2(heads))
    slopes = [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    slopes += [2.0 ** (-4.0 * (2 * h + 1) / n) for h in range(heads - n)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(slopes, sq, sk, device):
    """[hq, sq, sk] fp32: -slope * |i + sk - sq - j| (flash-attn's alibi_slopes)."""
    i = torch.arange(sq, device=device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=device)[None, :]
    return -slopes.to(device)[:, None, None] * (i - j).abs().float()


def reference(q, k, v, cu_q, cu_k, causal, scale, window=(-1, -1), softcap=0.0, slopes=None):
    """fp32 attention per sequence; returns out [tq, hq, dv], lse [hq, tq] and
    the low-precision emulation's out [tq, hq, dv] (see ATOL)."""
    hq, hkv = q.shape[1], k.shape[1]
    outs, lses, emulated = [], [], []
    for b in range(len(cu_q) - 1):
        qb = q[cu_q[b]:cu_q[b + 1]].float().transpose(0, 1)           # [hq, sq, d]
        kb = k[cu_k[b]:cu_k[b + 1]].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        vb = v[cu_k[b]:cu_k[b + 1]].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        sq, sk = qb.shape[1], kb.shape[1]
        s = torch.matmul(qb, kb.transpose(1, 2)) * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        if slopes is not None:  # after the cap, as flash-attn
            s = s + alibi_bias(slopes, sq, sk, q.device)
        s = s.masked_fill(~visible(sq, sk, causal, window, q.device), float("-inf"))
        lse = torch.logsumexp(s, -1)                                   # [hq, sq]
        p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
        outs.append(torch.matmul(p, vb).transpose(0, 1))               # [sq, hq, dv]
        lses.append(lse)
        un = torch.exp(s - s.amax(-1, keepdim=True)).nan_to_num(0.0)  # in (0, 1]
        o = torch.matmul(un.to(q.dtype).float(), vb) / un.sum(-1, keepdim=True).clamp_min(1e-30)
        emulated.append(o.to(q.dtype).float().transpose(0, 1))
    return torch.cat(outs), torch.cat(lses, 1), torch.cat(emulated)


def sdpa(q, k, v, cu_q, cu_k, causal, scale, window=(-1, -1), slopes=None):
    """PyTorch SDPA per sequence: a boolean mask, or with ALiBi an additive fp32
    one (bias, -inf where invisible) over heads expanded from the kv heads; the
    mask must have q's dtype, so ALiBi runs SDPA in fp32 (bf16 would round the
    bias of distant keys by whole units)."""
    hq, hkv = q.shape[1], k.shape[1]
    outs = []
    for b in range(len(cu_q) - 1):
        qb = q[cu_q[b]:cu_q[b + 1]].transpose(0, 1)[None]
        kb = k[cu_k[b]:cu_k[b + 1]].transpose(0, 1)[None]
        vb = v[cu_k[b]:cu_k[b + 1]].transpose(0, 1)[None]
        sq, sk = qb.shape[2], kb.shape[2]
        mask = visible(sq, sk, causal, window, q.device)
        gqa = hq != hkv
        if slopes is not None:
            mask = alibi_bias(slopes, sq, sk, q.device).masked_fill(~mask, float("-inf"))
            qb, kb, vb = (t.float().repeat_interleave(hq // t.shape[1], 1) for t in (qb, kb, vb))
            mask = mask[None]
            gqa = False
        o = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, scale=scale,
                                           enable_gqa=gqa)
        outs.append(o[0].transpose(0, 1))
    return torch.cat(outs)


def signature(arch, causal, dqk, dv, hq, hkv, q_lens, k_lens, window=(-1, -1), softcap=0.0,
              dtype="bf16", alibi=False):
    return (f"prefill qk={dqk} v={dv} hq={hq} hkv={hkv} mask={'causal' if causal else 'none'} "
            f"window={window[0]},{window[1]} softcap={softcap:g} alibi={int(alibi)} "
            f"lse=1 q={dtype} kv={dtype} out={dtype} arch={arch}")


def run_case(rt, arch, causal, dqk, dv, hq, hkv, q_lens, k_lens, window=(-1, -1), softcap=0.0,
             dtype="bf16", alibi=False):
    dev = "cuda"
    sig = signature(arch, causal, dqk, dv, hq, hkv, q_lens, k_lens, window, softcap, dtype, alibi)
    tdtype = torch.bfloat16 if dtype == "bf16" else torch.float16
    kernel = rt.kernel(sig)
    cu_q = [0]
    cu_k = [0]
    for a, b in zip(q_lens, k_lens):
        cu_q.append(cu_q[-1] + a)
        cu_k.append(cu_k[-1] + b)
    tq, tk = cu_q[-1], cu_k[-1]
    q = torch.randn(tq, hq, dqk, device=dev, dtype=tdtype)
    k = torch.randn(tk, hkv, dqk, device=dev, dtype=tdtype)
    v = torch.randn(tk, hkv, dv, device=dev, dtype=tdtype)
    out = torch.full((tq, hq * dv), float("nan"), device=dev, dtype=tdtype)
    lse = torch.full((hq, tq), float("nan"), device=dev, dtype=torch.float32)
    cuq = torch.tensor(cu_q, device=dev, dtype=torch.int32)
    cuk = torch.tensor(cu_k, device=dev, dtype=torch.int32)
    scale = 1.0 / math.sqrt(dqk)
    slopes = alibi_slopes(hq) if alibi else None
    kernel.prefill(q, k, v, out, cuq, cuk, max(q_lens), lse=lse, softmax_scale=scale,
                   alibi_slopes=slopes.to(dev) if alibi else None)
    torch.cuda.synchronize()
    ref_out, ref_lse, emu_out = reference(q, k, v, cu_q, cu_k, causal, scale, window, softcap,
                                          slopes)
    got = out.view(tq, hq, dv).float()
    unwritten = int(torch.isnan(got).sum()) + int(torch.isnan(lse).sum())
    err = (got - ref_out).abs().max().item()
    emu_err = (emu_out - ref_out).abs().max().item()
    tolerance = max(ATOL, EMULATION_FACTOR * emu_err)
    finite = torch.isfinite(ref_lse)
    same_inf = bool(torch.equal(torch.isinf(lse) & (lse < 0), ~finite))
    lse_rel = ((lse[finite] - ref_lse[finite]).abs() / ref_lse[finite].abs().clamp_min(1.0)).max().item() \
        if finite.any() else 0.0
    # SDPA has no soft cap: compared only where the function is the same.
    sd = sdpa(q, k, v, cu_q, cu_k, causal, scale, window, slopes).float() if softcap == 0 else ref_out
    rows = finite.transpose(0, 1)  # rows that see at least one key
    sdpa_diff = (got - sd)[rows].abs().max().item() if rows.any() else 0.0
    sdpa_err = (sd - ref_out)[rows].abs().max().item() if rows.any() else 0.0
    ok = unwritten == 0 and err <= tolerance and lse_rel <= LSE_RTOL and same_inf
    return dict(signature=sig, q_lens=q_lens, k_lens=k_lens, max_abs_err=err,
                emulation_max_abs_err=emu_err, tolerance=tolerance,
                lse_max_rel_err=lse_rel, unwritten=unwritten, empty_rows_lse_neg_inf=same_inf,
                max_abs_diff_vs_sdpa=sdpa_diff, sdpa_max_abs_err=sdpa_err, ok=ok)


def input_checks(rt, arch):
    """The binding's ALiBi checks and the runtime's messages, each naming the
    field; returns (all as expected, [what was checked])."""
    dev = "cuda"
    hq, hkv, d = 32, 8, 128
    sig = f"prefill qk={d} v={d} hq={hq} hkv={hkv} mask=causal arch={arch}"
    q = torch.zeros(4, hq, d, device=dev, dtype=torch.bfloat16)
    k = torch.zeros(4, hkv, d, device=dev, dtype=torch.bfloat16)
    out = torch.zeros(4, hq * d, device=dev, dtype=torch.bfloat16)
    cu = torch.tensor([0, 4], device=dev, dtype=torch.int32)
    alibi, plain = rt.kernel(sig + " alibi=1"), rt.kernel(sig)
    slopes = alibi_slopes(hq).to(dev)

    def run(kernel, s):
        kernel.prefill(q, k, k, out, cu, cu, 4, alibi_slopes=s)

    expected = [
        (lambda: run(alibi, None), ValueError, "alibi_slopes is required"),
        (lambda: run(alibi, slopes[:16]), ValueError, "[hq=32]"),
        (lambda: run(alibi, slopes.double()), ValueError, "alibi_slopes must be torch.float32"),
        (lambda: run(alibi, slopes.cpu()), ValueError, "alibi_slopes must be on the GPU"),
        (lambda: run(alibi, slopes.view(4, 8)), ValueError, "alibi_slopes must be 1-d"),
        (lambda: run(plain, slopes), ValueError, "kernel's signature says alibi=0"),
        (lambda: rt.kernel(sig + " window=-5,0"), mlagen.Error, "window_left must be -1"),
        (lambda: rt.kernel(sig + " softcap=-1"), mlagen.Error, "soft_cap must be finite and >= 0"),
        (lambda: rt.kernel(sig + " softcap=nan"), mlagen.Error, "soft_cap must be finite"),
    ]
    checks, ok = [], True
    for call, error, needle in expected:
        try:
            call()
            got = "no error"
        except error as e:
            got = str(e)
        passed = needle in got
        ok &= passed
        checks.append(f"{'ok' if passed else 'WRONG'}: {needle!r} <- {got[:100]!r}")
    run(alibi, slopes)  # a good call still runs
    torch.cuda.synchronize()
    return ok, checks


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    mixed = [1, 7, 64, 1000, 4096, 7, 1]
    grid = []
    for causal in (True, False):
        for dqk, dv in ((192, 128), (128, 128)):
            for hq, hkv in ((16, 16), (32, 8)):
                grid.append((causal, dqk, dv, hq, hkv, mixed, mixed))
                # Context chunk: keys differ from queries (new tokens vs. cached context).
                grid.append((causal, dqk, dv, hq, hkv, [1, 7, 64, 1000, 300],
                             [5, 100, 64, 2048, 4096]))
    # A causal batch where some queries see no key at all (sk < sq).
    grid.append((True, 192, 128, 16, 16, [64, 100], [10, 100]))
    # Beyond the foundation grid: sliding window with soft cap, and fp16.
    grid.append((True, 192, 128, 16, 16, mixed, mixed, (256, 0), 30.0))
    grid.append((False, 128, 128, 32, 8, mixed, mixed, (100, 50)))
    grid.append((True, 192, 128, 16, 16, mixed, mixed, (-1, -1), 0.0, "fp16"))
    # GQA backend (issue 6). Tuples: causal, dqk, dv, hq, hkv, q_lens, k_lens,
    # window, softcap, dtype, alibi.
    ragged = [1, 17, 100, 555, 2048, 3, 1000]
    chunk_q, chunk_k = [1, 7, 64, 1000, 300], [5, 100, 64, 2048, 4096]
    grid.append((True, 128, 128, 32, 8, ragged, ragged))                 # Llama-3-8B
    grid.append((True, 128, 128, 32, 8, chunk_q, chunk_k))
    for d, (hq, hkv) in ((64, (32, 8)), (80, (16, 8)), (96, (32, 8)), (256, (16, 8))):
        grid.append((True, d, d, hq, hkv, ragged, ragged))
        grid.append((False, d, d, hq, hkv, chunk_q, chunk_k))
    for causal in (True, False):                                         # ALiBi
        grid.append((causal, 128, 128, 32, 32, ragged, ragged, (-1, -1), 0.0, "bf16", True))
        grid.append((causal, 128, 128, 32, 8, chunk_q, chunk_k, (-1, -1), 0.0, "bf16", True))
    grid.append((True, 80, 80, 16, 8, ragged, ragged, (-1, -1), 0.0, "fp16", True))
    grid.append((True, 64, 64, 32, 8, ragged, ragged, (-1, -1), 0.0, "fp16"))  # sm_90a: three consumers
    grid.append((False, 256, 256, 16, 8, ragged, ragged, (-1, -1), 0.0, "bf16", True))
    for window in ((-1, -1), (128, 0), (1024, 0)):                      # Gemma-2 style
        grid.append((True, 256, 256, 16, 8, ragged, ragged, window, 50.0))
        grid.append((True, 128, 128, 32, 8, chunk_q, chunk_k, window, 50.0, "bf16", True))
    grid.append((True, 64, 64, 32, 8, ragged, ragged, (128, 0), 50.0))  # sm_90a: one consumer
    grid.append((False, 96, 96, 32, 8, chunk_q, chunk_k, (128, 64), 0.0, "bf16", True))
    # sm_90a's wgmma kernel on head dims ending inside a 64-column slab, in
    # one P.V product (112) or in 32-column ones (160).
    grid.append((True, 112, 112, 16, 8, ragged, ragged))
    grid.append((False, 160, 160, 16, 16, chunk_q, chunk_k))
    grid.append((True, 64, 64, 16, 16, chunk_q, chunk_k))               # sm_90a: three consumers
    grid.append((True, 128, 128, 32, 8, [64, 100], [10, 100], (-1, -1), 0.0, "bf16", True))
    case_filter = sys.argv[1] if len(sys.argv) > 1 else ""
    results = []
    ok_checks, checks = input_checks(rt, arch)
    print(f"{'PASS' if ok_checks else 'FAIL'} input checks: {checks}", flush=True)
    results.append(dict(signature="input checks", ok=ok_checks, checks=checks))
    for case in grid:
        if case_filter not in signature(arch, *case):
            continue
        r = run_case(rt, arch, *case)
        results.append(r)
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['signature']} q={r['q_lens']} k={r['k_lens']} "
              f"err={r['max_abs_err']:.2e} tol={r['tolerance']:.2e} "
              f"emu_err={r['emulation_max_abs_err']:.2e} lse_rel={r['lse_max_rel_err']:.2e} "
              f"vs_sdpa={r['max_abs_diff_vs_sdpa']:.2e} sdpa_err={r['sdpa_max_abs_err']:.2e} "
              f"unwritten={r['unwritten']}", flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "prefill_numerics.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend,
                       atol=ATOL, emulation_factor=EMULATION_FACTOR, lse_rtol=LSE_RTOL,
                       results=results), f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
