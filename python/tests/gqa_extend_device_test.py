"""GQA extend (chunked prefill) over a paged cache on the GPU, and the
gather_cache op it reads the cache with.

Run on a CUDA machine:
  PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/gqa_extend_device_test.py
Writes gqa_extend.json under $OUT (or /tmp). Exit status 1 on any failure.

1. gather_cache alone: 16-bit caches (bf16, fp16) must come back bit for
   bit; fp8 e4m3 caches must equal torch's (stored.float() * scale).to(out)
   bit for bit (keys k_scale, values a different v_scale), the one rounding
   being the final one. Caches as halves of one [blocks, 2, page, hkv, d]
   tensor, outputs as slices of one [T, 2, hkv, d] tensor; int32 and int64
   slots; slot -1 gives zeros; 0 tokens launches nothing.
2. Extend: requests with context lengths C and new-token counts N. The
   whole context and the new tokens' K/V are written into a shuffled paged
   cache with reshape_and_cache (bf16; fp8 with k_scale != v_scale). Then,
   per round: expand_page_indices (seq_starts = the chunk's begin) ->
   gather_cache (dequantised to bf16) -> prefill -> merge_attn_states into
   the running result. Context chunks run mask=none with cu_seqlens_k !=
   cu_seqlens_q; the last round is causal over keys [t, C + N) gathered
   from the cache (the new tokens included), so its keys end where its
   queries end. The result (and LSE) is compared with an fp32 causal
   attention of the new tokens over context + new keys, and with SDPA.

Sliding windows. FlashAttention aligns masks bottom-right: query i of a
request with sq queries and sk keys sits at key position sk - sq + i. That
is its absolute position only when the keys end where the queries end, so
inside a context chunk [b, e) with e < C + N a window (or causal) mask is
applied at the wrong offset. The composition is therefore exact only with
chunks that every new token of the request sees entirely (run with no
window) or not at all (skipped). A context position p is seen by new token
i iff p >= C + i - W: keys before C - W are never seen (skipped); keys in
[C - W, C + N - 1 - W) are seen by some new tokens only, so they must lie
in the causal last round, which is exact for any window. The schedule:
  N == 1 or C + N - 1 <= W: chunks over [max(0, C - W), C), last round the
    new tokens alone (t = C);
  otherwise: no context chunks; the last round starts at t = max(0, C - W)
    (it reads at most W + N keys: what a window layer reads anyway).
Without a window t = C and the chunks cover [0, C).

Tolerance (prefill_device_test.py's rule, plus the merges): per element
|got - ref| <= max(1e-2, 2 x the error of a bf16 emulation of the same
attention) + 2^-7 |ref| (each partial output and each merge rounds to
bf16); LSE to 1e-3 of max(1, |lse|). An fp8 cache's reference attends
over what the prefill is given: the dequantised cache values rounded to bf16,
as gather_cache returns them (vLLM's gather_and_maybe_dequant_cache does the
same); the gather itself is checked against torch's dequantisation above.
(Attending over the unrounded fp32 values instead moves the LSE by up to
5e-3: bf16 keeps 8 bits of kv_scale * e4m3.)
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

import mlagen

DEV = "cuda"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
ATOL = 1e-2
EMULATION_FACTOR = 2.0
MERGE_RTOL = 2 ** -7
LSE_RTOL = 1e-3


def cu(lens):
    c = [0]
    for n in lens:
        c.append(c[-1] + n)
    return c


def i32(values):
    return torch.tensor(values, dtype=torch.int32, device=DEV)


def bits(t):
    """Raw bits of a [..., hkv, d] tensor as a contiguous integer copy."""
    raw = t.view(torch.uint8 if t.element_size() == 1 else torch.int16)
    return raw.contiguous().clone()


def cache_rows(cache, rows):
    """fp32 rows of a [blocks, page, hkv, d] cache (a 16-bit one, or fp8
    e4m3 decoded exactly), indexed as uint8 where fp8: float8 tensors index
    poorly."""
    hkv, dim = cache.shape[-2], cache.shape[-1]
    if cache.element_size() == 1:
        raw = cache.view(torch.uint8).reshape(-1, hkv, dim)[rows]
        return raw.view(torch.float8_e4m3fn).float()
    return cache.reshape(-1, hkv, dim)[rows].float()


def random_fp8_bytes(shape):
    """fp8 e4m3 bytes without the NaN codes (0x7f, 0xff): a quantised cache
    holds none, and the kernels' software decode does not special-case them."""
    b = torch.randint(0, 256, shape, device=DEV, dtype=torch.uint8)
    return torch.where((b & 0x7f) == 0x7f, b ^ 0x01, b)


# --- 1. gather_cache alone ---------------------------------------------------

def run_gather_case(rt, arch, heads, dim, page, dtype, tokens, fp8=False, slots64=False,
                    padded=0):
    sig = (f"gather_cache hkv={heads} v={dim} page={page} kv=fp8e4m3 out={dtype} arch={arch}"
           if fp8 else f"gather_cache hkv={heads} v={dim} page={page} kv={dtype} arch={arch}")
    kernel = rt.kernel(sig)
    tdt = DTYPES[dtype]
    num_blocks = max(tokens // page, 1) + 5
    # Interleaved caches: k and v halves of one [blocks, 2, page, hkv, d].
    if fp8:
        whole = random_fp8_bytes((num_blocks, 2, page, heads, dim))
    else:
        whole = torch.randn(num_blocks, 2, page, heads, dim, device=DEV, dtype=tdt)
    k_cache, v_cache = whole.unbind(1)
    if fp8:
        k_cache, v_cache = k_cache.view(torch.float8_e4m3fn), v_cache.view(torch.float8_e4m3fn)
    # Outputs as slices of one [T, 2, hkv, d]: token stride 2 * hkv * d.
    out = torch.full((tokens, 2, heads, dim), float("nan"), device=DEV, dtype=tdt)
    out_k, out_v = out.unbind(1)
    slots = torch.randint(0, num_blocks * page, (tokens,), device=DEV, dtype=torch.int32)
    if padded:
        slots[torch.randperm(tokens, device=DEV)[:padded]] = -1
    if slots64:
        slots = slots.to(torch.int64)
    k_scale = torch.tensor([0.0371], device=DEV) if fp8 else None
    v_scale = torch.tensor([2.5], device=DEV) if fp8 else None
    kernel.gather_cache(k_cache, v_cache, out_k, out_v, slots, k_scale=k_scale,
                        v_scale=v_scale)
    torch.cuda.synchronize()
    mismatched = 0
    for got, cache, scale in ((out_k, k_cache, k_scale), (out_v, v_cache, v_scale)):
        rows = cache_rows(cache, slots.clamp_min(0).long())
        if fp8:
            rows = rows * scale  # the one rounding: .to(tdt) below
        rows = torch.where((slots >= 0)[:, None, None], rows.to(tdt),
                           torch.zeros((), dtype=tdt, device=DEV))
        mismatched += int((bits(got) != bits(rows)).sum())
    return dict(kind="gather", signature=kernel.signature, tokens=tokens, padded=padded,
                slot_dtype="int64" if slots64 else "int32", mismatched=mismatched,
                ok=mismatched == 0)


def gather_refuses_missing_scale(rt, arch):
    k = rt.kernel(f"gather_cache hkv=8 v=128 page=16 kv=fp8e4m3 arch={arch}")
    cache = torch.zeros(4, 16, 8, 128, device=DEV, dtype=torch.uint8)
    out = torch.full((2, 8, 128), 7.0, device=DEV, dtype=torch.bfloat16)
    try:
        k.gather_cache(cache, cache, out, out.clone(), torch.zeros(2, dtype=torch.int32,
                                                                    device=DEV),
                       k_scale=torch.ones(1, device=DEV))
        ok = False
    except ValueError as e:
        ok = "v_scale is required" in str(e)
    torch.cuda.synchronize()
    return dict(kind="gather", signature="fp8 gather without v_scale", tokens=2, padded=0,
                slot_dtype="int32", mismatched=0, ok=ok and bool((out == 7.0).all()))


# --- 2. extend -----------------------------------------------------------------

def visible(sq, sk, window):
    """[sq, sk] bool, bottom-right aligned causal with a left window W >= 0
    (key j seen by query i iff i' - W <= j <= i', i' = sk - sq + i)."""
    i = torch.arange(sq, device=DEV)[:, None] + (sk - sq)
    j = torch.arange(sk, device=DEV)[None, :]
    ok = j <= i
    if window >= 0:
        ok &= j >= i - window
    return ok


def reference(q, k, v, n, c, scale, window, softcap):
    """One request: fp32 causal attention of its n new tokens over its c + n
    keys (k, v fp32 [c + n, hkv, d]), and the bf16 emulation's output
    (inputs rounded to bf16, P = exp(s - rowmax) rounded before P.V)."""
    hq, hkv = q.shape[1], k.shape[1]
    qb = q.float().transpose(0, 1)
    kb = k.transpose(0, 1).repeat_interleave(hq // hkv, 0)
    vb = v.transpose(0, 1).repeat_interleave(hq // hkv, 0)
    out = []
    for kk, vv, low in ((kb, vb, False), (kb.bfloat16().float(), vb.bfloat16().float(), True)):
        s = torch.matmul(qb, kk.transpose(1, 2)) * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        s = s.masked_fill(~visible(n, c + n, window), float("-inf"))
        if not low:
            lse = torch.logsumexp(s, -1)
            out.append(torch.matmul(torch.exp(s - lse[..., None]), vv).transpose(0, 1))
        else:
            un = torch.exp(s - s.amax(-1, keepdim=True))
            o = torch.matmul(un.bfloat16().float(), vv) / un.sum(-1, keepdim=True)
            out.append(o.bfloat16().float().transpose(0, 1))
    return out[0], lse, out[1]


def sdpa(q, k, v, n, c, scale, window):
    o = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
        attn_mask=visible(n, c + n, window), scale=scale, enable_gqa=q.shape[1] != k.shape[1])
    return o[0].transpose(0, 1).float()


def schedule(c, n, window, chunk):
    """(context chunks [(b, e)], t): see the module docstring."""
    if window >= 0 and not (n == 1 or c + n - 1 <= window):
        return [], max(0, c - window)
    lo = max(0, c - window) if window >= 0 else 0
    return [(b, min(b + chunk, c)) for b in range(lo, c, chunk)], c


def run_extend(rt, arch, hq, hkv, dim, ctx_lens, new_lens, page, chunk, window=-1,
               softcap=0.0, fp8=False):
    tdt = torch.bfloat16
    batch = len(ctx_lens)
    scale = 1.0 / math.sqrt(dim)
    kv = "kv=fp8e4m3 out=bf16" if fp8 else "kv=bf16"
    kv_in = "in=bf16 kv=fp8e4m3" if fp8 else "kv=bf16"
    write = rt.kernel(f"reshape_and_cache hkv={hkv} v={dim} page={page} {kv_in} arch={arch}")
    gather = rt.kernel(f"gather_cache hkv={hkv} v={dim} page={page} {kv} arch={arch}")
    expand = rt.kernel(f"expand_page_indices page={page} arch={arch}")
    common = f"prefill qk={dim} v={dim} hq={hq} hkv={hkv}"
    tail = f"softcap={softcap:g} alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 arch={arch}"
    ctx_kernel = rt.kernel(f"{common} mask=none window=-1,-1 {tail}")
    last_kernel = rt.kernel(f"{common} mask=causal window={window},{0 if window >= 0 else -1} "
                            f"{tail}")
    merge = rt.kernel(f"merge_attn_states v={dim} hq={hq} lse=1 out=bf16 arch={arch}")

    # Every request's keys (context + new) in a paged cache, pages shuffled
    # across requests, written by reshape_and_cache.
    full = [c + n for c, n in zip(ctx_lens, new_lens)]
    pages = [math.ceil(f / page) for f in full]
    num_blocks = sum(pages) + 3
    perm = torch.randperm(num_blocks, device=DEV).to(torch.int32)
    block_table = torch.zeros(batch, max(pages), dtype=torch.int32, device=DEV)
    used = 0
    for b, p in enumerate(pages):
        block_table[b, :p] = perm[used:used + p]
        used += p
    keys = torch.randn(sum(full), hkv, dim, device=DEV, dtype=tdt)
    values = torch.randn(sum(full), hkv, dim, device=DEV, dtype=tdt)
    cache_dtype = torch.uint8 if fp8 else tdt
    sentinel = 0x7f if fp8 else float("nan")  # unwritten slots would poison the result
    k_cache = torch.full((num_blocks, page, hkv, dim), sentinel, device=DEV, dtype=cache_dtype)
    v_cache = torch.full_like(k_cache, sentinel)
    if fp8:
        k_cache, v_cache = k_cache.view(torch.float8_e4m3fn), v_cache.view(torch.float8_e4m3fn)
    slot_of = []  # per request: int64 slots of positions 0 .. C + N - 1
    for b, f in enumerate(full):
        pos = torch.arange(f, device=DEV)
        slot_of.append(block_table[b, pos // page].long() * page + pos % page)
    k_scale = torch.tensor([0.0125], device=DEV) if fp8 else None
    v_scale = torch.tensor([0.0071], device=DEV) if fp8 else None
    write.reshape_and_cache(keys, values, k_cache, v_cache, torch.cat(slot_of),
                            k_scale=k_scale, v_scale=v_scale)

    q = torch.randn(sum(new_lens), hq, dim, device=DEV, dtype=tdt)
    cu_q = cu(new_lens)
    cu_q_dev = i32(cu_q)
    slots_ok = True

    def gather_round(begins, lens):
        """Keys [begin, begin + len) of every request, through
        expand_page_indices and gather_cache."""
        nonlocal slots_ok
        total = sum(lens)
        slots = torch.full((total,), -7, dtype=torch.int32, device=DEV)
        expand.expand_page_indices(block_table, i32(cu(lens)), slots, max(lens),
                                   seq_starts=i32(begins))
        want = torch.cat([slot_of[b][s:s + n] for b, (s, n) in enumerate(zip(begins, lens))])
        slots_ok &= bool(torch.equal(slots.long(), want))
        k = torch.full((total, hkv, dim), float("nan"), device=DEV, dtype=tdt)
        v = torch.full_like(k, float("nan"))
        gather.gather_cache(k_cache, v_cache, k, v, slots, k_scale=k_scale, v_scale=v_scale)
        return k, v

    def prefill(kernel, k, v, k_lens):
        out = torch.full((q.shape[0], hq, dim), float("nan"), device=DEV, dtype=tdt)
        lse = torch.full((hq, q.shape[0]), float("nan"), device=DEV)
        kernel.prefill(q, k, v, out, cu_q_dev, i32(cu(k_lens)), max(new_lens), lse=lse,
                       softmax_scale=scale)
        return out, lse

    plans = [schedule(c, n, window, chunk) for c, n in zip(ctx_lens, new_lens)]
    # The last round: causal over [t, C + N) (never empty: N >= 1).
    begins = [t for _, t in plans]
    k, v = gather_round(begins, [f - t for f, t in zip(full, begins)])
    acc_out, acc_lse = prefill(last_kernel, k, v, [f - t for f, t in zip(full, begins)])
    rounds = max(len(chunks) for chunks, _ in plans)
    for r in range(rounds):
        # A request with fewer chunks brings an empty one (LSE -inf).
        spans = [chunks[r] if r < len(chunks) else (0, 0) for chunks, _ in plans]
        lens = [e - b for b, e in spans]
        k, v = gather_round([b for b, _ in spans], lens)
        part_out, part_lse = prefill(ctx_kernel, k, v, lens)
        merged = torch.full_like(acc_out, float("nan"))
        merged_lse = torch.full_like(acc_lse, float("nan"))
        merge.merge_attn_states(part_out, part_lse, acc_out, acc_lse, merged, merged_lse)
        acc_out, acc_lse = merged, merged_lse
    torch.cuda.synchronize()

    # The references, per request, over the cache's dequantised values.
    worst = dict(err=0.0, excess=-1.0, emu=0.0, lse=0.0, sdpa_diff=0.0, sdpa_err=0.0)
    for b, (c, n) in enumerate(zip(ctx_lens, new_lens)):
        rows = slot_of[b]
        kf, vf = cache_rows(k_cache, rows), cache_rows(v_cache, rows)
        if fp8:
            kf, vf = (kf * k_scale).to(tdt).float(), (vf * v_scale).to(tdt).float()
        qb = q[cu_q[b]:cu_q[b + 1]]
        ref, ref_lse, emu = reference(qb, kf, vf, n, c, scale, window, softcap)
        got = acc_out[cu_q[b]:cu_q[b + 1]].float()
        got_lse = acc_lse[:, cu_q[b]:cu_q[b + 1]]
        diff = (got - ref).abs()
        emu_err = (emu - ref).abs().max().item()
        allowed = max(ATOL, EMULATION_FACTOR * emu_err) + MERGE_RTOL * ref.abs()
        excess = (diff - allowed).max().item()
        if torch.isnan(diff).any():
            excess = float("inf")
        lse_rel = ((got_lse - ref_lse).abs() / ref_lse.abs().clamp_min(1.0)).max().item()
        if not math.isfinite(lse_rel):
            lse_rel = float("inf")
        worst["err"] = max(worst["err"], diff.max().item())
        worst["excess"] = max(worst["excess"], excess)
        worst["emu"] = max(worst["emu"], emu_err)
        worst["lse"] = max(worst["lse"], lse_rel)
        if not fp8 and softcap == 0:
            # SDPA (no soft cap in SDPA) over the same bf16 keys; by the
            # triangle inequality mlagen is within tolerance + SDPA's error.
            sd = sdpa(qb, kf.to(tdt), vf.to(tdt), n, c, scale, window)
            worst["sdpa_diff"] = max(worst["sdpa_diff"], (got - sd).abs().max().item())
            sdpa_err = (sd - ref).abs().max().item()
            worst["sdpa_err"] = max(worst["sdpa_err"], sdpa_err)
            if (got - sd).abs().max().item() > allowed.max().item() + sdpa_err:
                worst["excess"] = max(worst["excess"], float("inf"))
    ok = worst["excess"] <= 0 and worst["lse"] <= LSE_RTOL and slots_ok
    return dict(kind="extend", hq=hq, hkv=hkv, dim=dim, ctx_lens=ctx_lens, new_lens=new_lens,
                page=page, chunk=chunk, window=window, softcap=softcap,
                cache="fp8e4m3" if fp8 else "bf16", context_rounds=rounds,
                last_round_keys=[f - t for f, t in zip(full, begins)],
                max_abs_err=worst["err"], tolerance_excess=worst["excess"],
                emulation_max_abs_err=worst["emu"], lse_max_rel_err=worst["lse"],
                max_abs_diff_vs_sdpa=worst["sdpa_diff"], sdpa_max_abs_err=worst["sdpa_err"],
                slots_match_torch=slots_ok, ok=ok)


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    results = []
    # 1. gather_cache alone.
    for dtype in ("bf16", "fp16"):
        for heads, dim, page in ((8, 128, 16), (2, 64, 64), (8, 256, 16), (4, 80, 1)):
            results.append(run_gather_case(rt, arch, heads, dim, page, dtype, 1000, padded=17,
                                           slots64=page == 64))
        for heads, dim, page in ((8, 128, 64), (2, 64, 16), (4, 96, 16)):
            for slots64 in (False, True):
                results.append(run_gather_case(rt, arch, heads, dim, page, dtype, 777,
                                               fp8=True, slots64=slots64, padded=9))
    results.append(run_gather_case(rt, arch, 8, 128, 16, "bf16", 0))
    results.append(run_gather_case(rt, arch, 8, 128, 16, "bf16", 0, fp8=True))
    results.append(gather_refuses_missing_scale(rt, arch))

    # 2. Extend. (hq, hkv, d, ctx_lens, new_lens, page, chunk, window, softcap)
    ragged_ctx = [0, 1, 37, 300, 2049, 5000]
    ragged_new = [16, 1, 100, 513, 7, 64]
    grid = [
        (32, 8, 128, ragged_ctx, ragged_new, 16, 1024, -1, 0.0),   # Llama-3-8B
        (32, 8, 128, ragged_ctx, ragged_new, 64, 1024, -1, 0.0),
        (32, 8, 128, [5000, 37], [1, 513], 64, 256, -1, 0.0),
        (8, 2, 64, ragged_ctx, ragged_new[::-1], 16, 1024, -1, 0.0),
        (8, 2, 64, [2049, 0, 300], [100, 33, 1], 64, 512, -1, 0.0),
        (16, 8, 256, ragged_ctx, ragged_new, 16, 1024, -1, 50.0),  # Gemma-2: soft cap
        # Windows: N == 1 and contexts inside the window chunk; the rest
        # fold the window's context into the causal last round.
        (16, 8, 256, [5000, 2049, 300, 37, 0], [1, 1, 100, 16, 513], 16, 1024, 1024, 50.0),
        (16, 8, 256, [5000, 2049, 300, 3000], [100, 513, 1, 1], 64, 256, 1024, 50.0),
        (32, 8, 128, [5000, 300, 2049], [1, 16, 64], 16, 512, 4096, 0.0),
    ]
    for hq, hkv, dim, ctx, new, page, chunk, window, softcap in grid:
        for fp8 in (False, True):
            results.append(run_extend(rt, arch, hq, hkv, dim, ctx, new, page, chunk, window,
                                      softcap, fp8))
    for r in results:
        if r["kind"] == "gather":
            print(f"{'PASS' if r['ok'] else 'FAIL'} gather {r['signature']} "
                  f"tokens={r['tokens']} padded={r['padded']} slots={r['slot_dtype']} "
                  f"mismatched={r['mismatched']}", flush=True)
        else:
            print(f"{'PASS' if r['ok'] else 'FAIL'} extend hq={r['hq']} hkv={r['hkv']} "
                  f"d={r['dim']} page={r['page']} chunk={r['chunk']} window={r['window']} "
                  f"softcap={r['softcap']:g} cache={r['cache']} ctx={r['ctx_lens']} "
                  f"new={r['new_lens']} rounds={r['context_rounds']} "
                  f"err={r['max_abs_err']:.2e} excess={r['tolerance_excess']:.2e} "
                  f"emu_err={r['emulation_max_abs_err']:.2e} "
                  f"lse_rel={r['lse_max_rel_err']:.2e} "
                  f"vs_sdpa={r['max_abs_diff_vs_sdpa']:.2e} slots_ok={r['slots_match_torch']}",
                  flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "gqa_extend.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend, atol=ATOL,
                       emulation_factor=EMULATION_FACTOR, merge_rtol=MERGE_RTOL,
                       lse_rtol=LSE_RTOL, results=results), f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
