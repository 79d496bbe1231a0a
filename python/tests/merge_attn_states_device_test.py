"""merge_attn_states and expand_page_indices on the GPU, and the
chunked-context prefill they enable.

Run on a CUDA machine:
  PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/merge_attn_states_device_test.py
Writes merge_attn_states.json under $OUT (or /tmp). Exit status 1 on any failure.

1. The op alone against an fp32 reference: bf16 and fp16, head dims 128 and
   512, 16 and 128 heads, strided views, LSE rows longer than the tokens,
   empty parts (LSE -inf, +inf, both), NaN in an empty part's output, and
   lse=0 kernels.
2. expand_page_indices against torch indexing: pages of 1, 16, 64 and 528
   keys, with and without seq_starts, empty requests.
3. Chunked-context prefill (issue 3 item 7) at MLA prefill dims 192/128:
   the context is gathered from a shuffled paged cache through the slots
   expand_page_indices writes (checked against torch), mlagen prefill runs
   non-causally for the new tokens against each context chunk
   (cu_seqlens_k != cu_seqlens_q) and causally for the new tokens against
   themselves, the parts are merged by LSE with this op, and the result
   equals one causal attention over context + new tokens (fp32 reference).
"""
import json
import math
import os
import sys

import torch

import mlagen

DEV = "cuda"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def merge_reference(o_p, lse_p, o_s, lse_s):
    """fp32 vLLM semantics. o [T, H, D], lse [H, T]; returns out, lse."""
    lp = lse_p.float().transpose(0, 1).clone()  # [T, H]
    ls = lse_s.float().transpose(0, 1).clone()
    lp[torch.isinf(lp)] = float("-inf")
    ls[torch.isinf(ls)] = float("-inf")
    m = torch.maximum(lp, ls)
    empty = torch.isinf(m)
    m0 = torch.where(empty, torch.zeros_like(m), m)
    wp, ws = torch.exp(lp - m0), torch.exp(ls - m0)
    total = wp + ws
    sp = torch.where(total > 0, wp / total, torch.zeros_like(total))[..., None]
    ss = torch.where(total > 0, ws / total, torch.zeros_like(total))[..., None]
    # An empty part is never read: its rows may hold NaN.
    op = torch.where(sp > 0, o_p.float(), torch.zeros_like(o_p, dtype=torch.float32))
    os_ = torch.where(ss > 0, o_s.float(), torch.zeros_like(o_s, dtype=torch.float32))
    out = sp * op + ss * os_
    lse = torch.where(total > 0, m0 + torch.log(total), torch.full_like(total, float("-inf")))
    return out, lse.transpose(0, 1)


def close(got, ref, atol, rtol):
    """max |got - ref| - (atol + rtol |ref|) <= 0, and the max abs error."""
    diff = (got.float() - ref.float()).abs()
    excess = (diff - (atol + rtol * ref.float().abs())).max().item() if diff.numel() else 0.0
    return excess <= 0 and not torch.isnan(diff).any().item(), diff.max().item() if diff.numel() else 0.0


def lse_close(got, ref, rtol=1e-4):
    finite = torch.isfinite(ref)
    same_inf = bool(torch.equal(torch.isinf(got) & (got < 0), ~finite))
    rel = ((got[finite] - ref[finite]).abs() / ref[finite].abs().clamp_min(1.0)).max().item() \
        if finite.any() else 0.0
    return same_inf and rel <= rtol, rel


def run_merge_case(rt, arch, tokens, heads, dim, dtype, lse_out=True, strided=False,
                   empty=True):
    sig = f"merge_attn_states v={dim} hq={heads} lse={int(lse_out)} out={dtype} arch={arch}"
    kernel = rt.kernel(sig)
    tdt = DTYPES[dtype]
    if strided:
        # Views into wider buffers: token and head strides that are not the
        # contiguous ones, LSE rows longer than the tokens.
        o_p = torch.randn(tokens, heads, dim + 64, device=DEV, dtype=tdt)[:, :, :dim]
        o_s = torch.randn(tokens, heads + 2, dim, device=DEV, dtype=tdt)[:, 1:heads + 1]
        out_buf = torch.full((tokens, heads, dim + 8), float("nan"), device=DEV, dtype=tdt)
        out = out_buf[:, :, :dim]
        lse_p = (torch.randn(heads, tokens + 13, device=DEV) * 3)[:, :tokens]
        lse_s = (torch.randn(heads, tokens + 5, device=DEV) * 3)[:, 5:]
        out_lse = torch.full((heads, tokens + 3), float("nan"), device=DEV)[:, :tokens]
    else:
        o_p = torch.randn(tokens, heads, dim, device=DEV, dtype=tdt)
        o_s = torch.randn(tokens, heads, dim, device=DEV, dtype=tdt)
        out = torch.full((tokens, heads, dim), float("nan"), device=DEV, dtype=tdt)
        lse_p = torch.randn(heads, tokens, device=DEV) * 3
        lse_s = torch.randn(heads, tokens, device=DEV) * 3
        out_lse = torch.full((heads, tokens), float("nan"), device=DEV)
    if empty and tokens >= 4:
        # Token 0: prefix empty (its output NaN); 1: suffix empty (+inf, as
        # vLLM reads it); 2: both empty; 3: a large gap (one part ~0).
        lse_p[:, 0] = float("-inf")
        o_p[0] = float("nan")
        lse_s[:, 1] = float("inf")
        o_s[1] = float("nan")
        lse_p[:, 2] = float("-inf")
        lse_s[:, 2] = float("-inf")
        o_p[2] = float("nan")
        lse_s[:, 3] = lse_p[:, 3] + 200.0
    kernel.merge_attn_states(o_p, lse_p, o_s, lse_s, out, out_lse if lse_out else None)
    torch.cuda.synchronize()
    ref_out, ref_lse = merge_reference(o_p, lse_p, o_s, lse_s)
    # One rounding of an fp32 result to bf16/fp16, plus exp2/log2 approximations.
    eps = 2 ** -8 if dtype == "bf16" else 2 ** -11
    ok_out, err = close(out, ref_out, 1e-5, eps)
    ok = ok_out
    lse_rel = None
    if lse_out:
        ok_lse, lse_rel = lse_close(out_lse, ref_lse)
        ok = ok and ok_lse
    else:
        ok = ok and bool(torch.isnan(out_lse).all())  # not written
    return dict(kind="merge", signature=sig, tokens=tokens, strided=strided, empty_parts=empty,
                max_abs_err=err, lse_max_rel_err=lse_rel, ok=ok)


def torch_slots(block_table, starts, lens, page):
    out = []
    for b, (s, n) in enumerate(zip(starts, lens)):
        pos = torch.arange(s, s + n, device=DEV)
        out.append(block_table[b, pos // page].long() * page + pos % page)
    return torch.cat(out).to(torch.int32) if out else torch.zeros(0, dtype=torch.int32, device=DEV)


def run_expand_case(rt, arch, page, lens, with_starts):
    kernel = rt.kernel(f"expand_page_indices page={page} arch={arch}")
    batch = len(lens)
    starts = [int(x) for x in torch.randint(0, 3 * page, (batch,))] if with_starts else [0] * batch
    pages = max(math.ceil((s + n) / page) for s, n in zip(starts, lens)) if batch else 1
    block_table = torch.randint(0, 100000, (batch, max(pages, 1) + 3), dtype=torch.int32, device=DEV)
    total = sum(lens)
    slots = torch.full((total + 7,), -7, dtype=torch.int32, device=DEV)
    cu_dev = torch.tensor(cu(lens), dtype=torch.int32, device=DEV)
    starts_dev = torch.tensor(starts, dtype=torch.int32, device=DEV) if with_starts else None
    kernel.expand_page_indices(block_table, cu_dev, slots, max(lens) if lens else 0,
                               seq_starts=starts_dev)
    torch.cuda.synchronize()
    ref = torch_slots(block_table, starts, lens, page)
    ok = bool(torch.equal(slots[:total], ref)) and bool((slots[total:] == -7).all())
    return dict(kind="expand", signature=kernel.signature, lens=lens, seq_starts=with_starts,
                max_abs_err=float((slots[:total].long() - ref.long()).abs().max().item())
                if total else 0.0, lse_max_rel_err=None, ok=ok)


def attention_reference(q, k, v, q_lens, k_lens, scale):
    """fp32 causal attention, bottom-right aligned: [tq, hq, dv], [hq, tq]."""
    outs, lses = [], []
    cq = ck = 0
    for sq, sk in zip(q_lens, k_lens):
        qb = q[cq:cq + sq].float().transpose(0, 1)
        kb = k[ck:ck + sk].float().transpose(0, 1)
        vb = v[ck:ck + sk].float().transpose(0, 1)
        s = torch.matmul(qb, kb.transpose(1, 2)) * scale
        i = torch.arange(sq, device=DEV)[:, None] + (sk - sq)
        j = torch.arange(sk, device=DEV)[None, :]
        s = s.masked_fill(~(j <= i), float("-inf"))
        lse = torch.logsumexp(s, -1)
        p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
        outs.append(torch.matmul(p, vb).transpose(0, 1))
        lses.append(lse)
        cq += sq
        ck += sk
    return torch.cat(outs), torch.cat(lses, 1)


def cu(lens):
    c = [0]
    for n in lens:
        c.append(c[-1] + n)
    return c


def run_chunked_prefill(rt, arch, ctx_lens, new_lens, chunk, heads=16, page=16, dqk=192, dv=128):
    """The chunked-context prefill proof; see the module docstring."""
    tdt = torch.bfloat16
    scale = 1.0 / math.sqrt(dqk)
    batch = len(ctx_lens)
    expand = rt.kernel(f"expand_page_indices page={page} arch={arch}")
    non_causal = rt.kernel(f"prefill qk={dqk} v={dv} hq={heads} hkv={heads} mask=none "
                           f"lse=1 arch={arch}")
    causal = rt.kernel(f"prefill qk={dqk} v={dv} hq={heads} hkv={heads} mask=causal "
                       f"lse=1 arch={arch}")
    merge = rt.kernel(f"merge_attn_states v={dv} hq={heads} lse=1 out=bf16 arch={arch}")

    # The context lives in a paged cache, pages shuffled across requests.
    pages = [math.ceil(n / page) for n in ctx_lens]
    num_blocks = sum(pages) + 3
    perm = torch.randperm(num_blocks, device=DEV).to(torch.int32)
    block_table = torch.zeros(batch, max(max(pages), 1), dtype=torch.int32, device=DEV)
    used = 0
    for b, n in enumerate(pages):
        block_table[b, :n] = perm[used:used + n]
        used += n
    k_cache = torch.randn(num_blocks, page, heads, dqk, device=DEV, dtype=tdt)
    v_cache = torch.randn(num_blocks, page, heads, dv, device=DEV, dtype=tdt)

    def gather(b, begin, end):
        pos = torch.arange(begin, end, device=DEV)
        slots = block_table[b, pos // page].long() * page + pos % page
        return (k_cache.view(-1, heads, dqk)[slots], v_cache.view(-1, heads, dv)[slots])

    slots_ok = True

    def gather_chunk(begins, lens):
        """Every request's context chunk, through expand_page_indices."""
        nonlocal slots_ok
        slots = torch.empty(max(sum(lens), 1), dtype=torch.int32, device=DEV)
        expand.expand_page_indices(block_table, torch.tensor(cu(lens), dtype=torch.int32,
                                                             device=DEV),
                                   slots, max(lens),
                                   seq_starts=torch.tensor(begins, dtype=torch.int32, device=DEV))
        slots = slots[:sum(lens)].long()
        slots_ok &= bool(torch.equal(slots.int(), torch_slots(block_table, begins, lens, page)))
        return k_cache.view(-1, heads, dqk)[slots], v_cache.view(-1, heads, dv)[slots]

    total_new = sum(new_lens)
    q = torch.randn(total_new, heads, dqk, device=DEV, dtype=tdt)
    k_new = torch.randn(total_new, heads, dqk, device=DEV, dtype=tdt)
    v_new = torch.randn(total_new, heads, dv, device=DEV, dtype=tdt)
    cu_q = cu(new_lens)
    cu_q_dev = torch.tensor(cu_q, dtype=torch.int32, device=DEV)
    max_q = max(new_lens)

    def prefill(kernel, k, v, k_lens):
        out = torch.full((total_new, heads, dv), float("nan"), device=DEV, dtype=tdt)
        lse = torch.full((heads, total_new), float("nan"), device=DEV)
        cu_k = torch.tensor(cu(k_lens), dtype=torch.int32, device=DEV)
        kernel.prefill(q, k, v, out, cu_q_dev, cu_k, max_q, lse=lse, softmax_scale=scale)
        return out, lse

    # The new tokens against themselves, causal.
    acc_out, acc_lse = prefill(causal, k_new, v_new, new_lens)
    # Each context chunk, non-causal (every new token sees the whole chunk),
    # merged in; a request with fewer chunks brings an empty one (LSE -inf).
    num_chunks = max(math.ceil(n / chunk) for n in ctx_lens) if max(ctx_lens) else 0
    for c in range(num_chunks):
        begins = [min(c * chunk, n) for n in ctx_lens]
        lens = [min((c + 1) * chunk, n) - b for n, b in zip(ctx_lens, begins)]
        k_chunk, v_chunk = gather_chunk(begins, lens)
        part_out, part_lse = prefill(non_causal, k_chunk, v_chunk, lens)
        merged = torch.full_like(acc_out, float("nan"))
        merged_lse = torch.full_like(acc_lse, float("nan"))
        merge.merge_attn_states(part_out, part_lse, acc_out, acc_lse, merged, merged_lse)
        acc_out, acc_lse = merged, merged_lse
    torch.cuda.synchronize()

    # One causal attention over context + new tokens per request.
    ks, vs = [], []
    for b, n in enumerate(ctx_lens):
        kb, vb = gather(b, 0, n)
        ks += [kb, k_new[cu_q[b]:cu_q[b + 1]]]
        vs += [vb, v_new[cu_q[b]:cu_q[b + 1]]]
    full_lens = [c + n for c, n in zip(ctx_lens, new_lens)]
    ref_out, ref_lse = attention_reference(q, torch.cat(ks), torch.cat(vs), new_lens,
                                           full_lens, scale)
    # Prefill's 1e-2, plus bf16 rounding each part's output and then each
    # merge's (2^-7 relative for the two).
    ok_out, err = close(acc_out, ref_out, 1e-2, 2 ** -7)
    ok_lse, lse_rel = lse_close(acc_lse, ref_lse, 1e-3)
    return dict(kind="chunked_prefill", ctx_lens=ctx_lens, new_lens=new_lens, chunk=chunk,
                page=page, chunks=num_chunks, max_abs_err=err, lse_max_rel_err=lse_rel,
                slots_match_torch=slots_ok, ok=ok_out and ok_lse and slots_ok)


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    results = []
    for dtype in ("bf16", "fp16"):
        for tokens, heads, dim in ((1000, 16, 128), (37, 128, 512), (4, 1, 8)):
            results.append(run_merge_case(rt, arch, tokens, heads, dim, dtype))
        results.append(run_merge_case(rt, arch, 333, 16, 128, dtype, strided=True))
    results.append(run_merge_case(rt, arch, 100, 16, 128, "bf16", lse_out=False))
    results.append(run_merge_case(rt, arch, 70000, 16, 128, "bf16", empty=False))
    results.append(run_merge_case(rt, arch, 0, 16, 128, "bf16", empty=False))
    for page in (1, 16, 64, 528):
        for with_starts in (False, True):
            results.append(run_expand_case(rt, arch, page, [0, 1, 300, 2049, 17], with_starts))
    results.append(run_expand_case(rt, arch, 64, [0, 0], False))
    for ctx_lens, new_lens, chunk in (([100], [37], 4096),
                                      ([0, 513, 2048, 7], [5, 64, 300, 1], 256),
                                      ([4096, 1000], [1000, 17], 1024),
                                      ([0, 0], [9, 3], 64)):
        results.append(run_chunked_prefill(rt, arch, ctx_lens, new_lens, chunk))
    for r in results:
        what = r.get("signature") or f"ctx={r['ctx_lens']} new={r['new_lens']} chunk={r['chunk']}"
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['kind']} {what} err={r['max_abs_err']:.2e} "
              f"lse_rel={r['lse_max_rel_err']}", flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "merge_attn_states.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend, results=results),
                  f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
