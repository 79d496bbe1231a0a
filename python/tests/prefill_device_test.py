"""Prefill numerics on the GPU: mlagen against an fp32 reference and PyTorch SDPA.

Run on a CUDA machine:  PYTHONPATH=python python3 python/tests/prefill_device_test.py
Writes prefill_numerics.json under $OUT (or /tmp). Exit status 1 on any failure.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

import mlagen

ATOL = 1e-2      # bf16 inputs of unit-normal scale
LSE_RTOL = 1e-3


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


def reference(q, k, v, cu_q, cu_k, causal, scale, window=(-1, -1), softcap=0.0):
    """fp32 attention per sequence; returns out [tq, hq, dv], lse [hq, tq]."""
    hq, hkv = q.shape[1], k.shape[1]
    outs, lses = [], []
    for b in range(len(cu_q) - 1):
        qb = q[cu_q[b]:cu_q[b + 1]].float().transpose(0, 1)           # [hq, sq, d]
        kb = k[cu_k[b]:cu_k[b + 1]].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        vb = v[cu_k[b]:cu_k[b + 1]].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        sq, sk = qb.shape[1], kb.shape[1]
        s = torch.matmul(qb, kb.transpose(1, 2)) * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        s = s.masked_fill(~visible(sq, sk, causal, window, q.device), float("-inf"))
        lse = torch.logsumexp(s, -1)                                   # [hq, sq]
        p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
        outs.append(torch.matmul(p, vb).transpose(0, 1))               # [sq, hq, dv]
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses, 1)


def sdpa(q, k, v, cu_q, cu_k, causal, scale, window=(-1, -1)):
    hq, hkv = q.shape[1], k.shape[1]
    outs = []
    for b in range(len(cu_q) - 1):
        qb = q[cu_q[b]:cu_q[b + 1]].transpose(0, 1)[None]
        kb = k[cu_k[b]:cu_k[b + 1]].transpose(0, 1)[None]
        vb = v[cu_k[b]:cu_k[b + 1]].transpose(0, 1)[None]
        sq, sk = qb.shape[2], kb.shape[2]
        mask = visible(sq, sk, causal, window, q.device)
        o = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, scale=scale,
                                           enable_gqa=hq != hkv)
        outs.append(o[0].transpose(0, 1))
    return torch.cat(outs)


def run_case(rt, arch, causal, dqk, dv, hq, hkv, q_lens, k_lens, window=(-1, -1), softcap=0.0,
             dtype="bf16"):
    dev = "cuda"
    sig = (f"prefill qk={dqk} v={dv} hq={hq} hkv={hkv} mask={'causal' if causal else 'none'} "
           f"window={window[0]},{window[1]} softcap={softcap:g} "
           f"lse=1 q={dtype} kv={dtype} out={dtype} arch={arch}")
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
    kernel.prefill(q, k, v, out, cuq, cuk, max(q_lens), lse=lse, softmax_scale=scale)
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(q, k, v, cu_q, cu_k, causal, scale, window, softcap)
    got = out.view(tq, hq, dv).float()
    unwritten = int(torch.isnan(got).sum()) + int(torch.isnan(lse).sum())
    err = (got - ref_out).abs().max().item()
    finite = torch.isfinite(ref_lse)
    same_inf = bool(torch.equal(torch.isinf(lse) & (lse < 0), ~finite))
    lse_rel = ((lse[finite] - ref_lse[finite]).abs() / ref_lse[finite].abs().clamp_min(1e-6)).max().item() \
        if finite.any() else 0.0
    # SDPA has no soft cap: compared only where the function is the same.
    sd = sdpa(q, k, v, cu_q, cu_k, causal, scale, window).float() if softcap == 0 else ref_out
    rows = finite.transpose(0, 1)  # rows that see at least one key
    sdpa_diff = (got - sd)[rows].abs().max().item() if rows.any() else 0.0
    sdpa_err = (sd - ref_out)[rows].abs().max().item() if rows.any() else 0.0
    ok = unwritten == 0 and err <= ATOL and lse_rel <= LSE_RTOL and same_inf
    return dict(signature=sig, q_lens=q_lens, k_lens=k_lens, max_abs_err=err,
                lse_max_rel_err=lse_rel, unwritten=unwritten, empty_rows_lse_neg_inf=same_inf,
                max_abs_diff_vs_sdpa=sdpa_diff, sdpa_max_abs_err=sdpa_err, ok=ok)


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = "sm_90a" if torch.cuda.get_device_capability() >= (9, 0) else "sm_80"
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
    results = []
    for case in grid:
        r = run_case(rt, arch, *case)
        results.append(r)
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['signature']} q={r['q_lens']} k={r['k_lens']} "
              f"err={r['max_abs_err']:.2e} lse_rel={r['lse_max_rel_err']:.2e} "
              f"vs_sdpa={r['max_abs_diff_vs_sdpa']:.2e} sdpa_err={r['sdpa_max_abs_err']:.2e} "
              f"unwritten={r['unwritten']}", flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "prefill_numerics.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend,
                       atol=ATOL, lse_rtol=LSE_RTOL, results=results), f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
