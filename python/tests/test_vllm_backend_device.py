"""The vLLM-shaped MLA backend (python/examples/vllm_mla_backend.py) on the GPU,
step by step, against an fp32 PyTorch reference of the same steps.

Run on a CUDA machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/test_vllm_backend_device.py
Writes vllm_backend.json under $OUT (or /tmp). Exit status 1 on any failure.

Each configuration (heads 16 / 128, pages of 64 / 1 keys, decodes first as
vLLM v1 or prefills first as v0, bf16 or fp8 e4m3 caches, bf16 or e4m3
decode queries, one query token a decode or two (speculative decoding),
decode kernels pinned by batch range)
runs an engine-like schedule over one
shuffled paged latent cache: mixed steps of ragged prefills (one chunked: its
second chunk attends to a cached context) and decodes, then decode-only steps
of which one is captured in a CUDA graph and replayed after the builder has
written the next steps' metadata. Every step's output rows are compared with
the un-absorbed MLA attention computed in fp32 (SDPA, math backend) from the
same bf16 inputs (with an fp8 cache: every latent the step reads from the
cache rounded as the cache stores it, a prefill's new tokens as given);
PyTorch's bf16 SDPA on the same inputs gives the scale of bf16 error for the
table. With an e4m3 decode query the reference attends in the latent space
with the decode's own rounded q. Rows past num_actual_tokens must stay untouched;
a graph replay must equal the eager forward bit for bit.
"""
import json
import math
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import vllm_mla_backend as be  # noqa: E402

DEV = "cuda"
ATOL = 3e-2          # bf16 outputs of unit scale, two bf16 roundings on the absorbed path
SDPA_FACTOR = 2.0    # or twice bf16 SDPA's own error on the same step, where that is larger
DT = torch.bfloat16


class Engine:
    """Requests, their latent history (what the cache must hold) and pages."""

    def __init__(self, impl, num_blocks, seed):
        self.impl = impl
        self.page = impl.page_size
        self.gen = torch.Generator(device="cpu").manual_seed(seed)
        self.free = torch.randperm(num_blocks, generator=self.gen).tolist()
        garbage = torch.randn(num_blocks, self.page, be.LATENT_DIM, generator=self.gen)
        self.kv_cache = impl.new_kv_cache(num_blocks, DEV)
        self.kv_cache.copy_(garbage.to(self.kv_cache.dtype))  # garbage everywhere
        self.reqs = {}  # id -> dict(pages, kv_c [n, 512], k_pe [n, 64])

    def schedule(self, batch):
        """batch: [(req_id, new_tokens)] in the step's request order. Returns
        the builder's host inputs and the step's inputs (q, kv_c, k_pe)."""
        qsl, seq_lens, slots, table_rows = [0], [], [], []
        for rid, n in batch:
            r = self.reqs.setdefault(rid, dict(pages=[], len=0, kv_c=[], k_pe=[]))
            start = r["len"]
            r["len"] += n
            while len(r["pages"]) * self.page < r["len"]:
                r["pages"].append(self.free.pop())
            for j in range(start, r["len"]):
                slots.append(r["pages"][j // self.page] * self.page + j % self.page)
            qsl.append(qsl[-1] + n)
            seq_lens.append(r["len"])
            table_rows.append(r["pages"])
        width = max(len(p) for p in table_rows) + 1
        table = torch.zeros(len(batch), width, dtype=torch.int32)
        for i, p in enumerate(table_rows):
            table[i, :len(p)] = torch.tensor(p, dtype=torch.int32)
        T, H = qsl[-1], self.impl.num_heads
        q = torch.randn(T, H, be.QK_HEAD_DIM, generator=self.gen).to(DT).to(DEV)
        kv_c = torch.randn(T, be.KV_LORA_RANK, generator=self.gen).to(DT).to(DEV)
        k_pe = torch.randn(T, 1, be.QK_ROPE_HEAD_DIM, generator=self.gen).to(DT).to(DEV)
        for i, (rid, n) in enumerate(batch):
            self.reqs[rid]["kv_c"].append(kv_c[qsl[i]:qsl[i + 1]])
            self.reqs[rid]["k_pe"].append(k_pe[qsl[i]:qsl[i + 1], 0])
        host = dict(query_start_loc=qsl, seq_lens=seq_lens, block_table=table, slot_mapping=slots)
        return host, (q, kv_c, k_pe)

    def stored(self, x):
        """x as the cache gives it back: bf16 as is, fp8 rounded from x / k_scale."""
        if not self.impl.fp8:
            return x.float()
        s = self.impl.k_scale_t
        return (x.float() / s).clamp(-448, 448).to(torch.float8_e4m3fn).float() * s

    def reference(self, batch, host, q):
        """out [T, H*128]: fp32 math SDPA and bf16 SDPA of the un-absorbed MLA.
        Decodes read every latent from the cache; prefills their context."""
        impl, H = self.impl, self.impl.num_heads
        W_UK, W_UV = impl.W_UK.float(), impl.W_UV.float()
        qsl = host["query_start_loc"]
        ref = torch.empty(qsl[-1], H * be.V_HEAD_DIM, device=DEV)
        bf = torch.empty_like(ref)
        for i, (rid, n) in enumerate(batch):
            r = self.reqs[rid]
            latent = torch.cat([torch.cat(r["kv_c"]), torch.cat(r["k_pe"])], -1)
            cached = latent.shape[0] - (0 if n == impl.decode_q_len else n)
            latent = torch.cat([self.stored(latent[:cached]), latent[cached:].float()])
            kv_c, k_pe = latent[:, :be.KV_LORA_RANK], latent[:, be.KV_LORA_RANK:]
            keys = kv_c.shape[0]
            k_nope = torch.einsum("kc,hdc->hkd", kv_c, W_UK)        # [H, keys, 128]
            k = torch.cat([k_nope, k_pe[None].expand(H, -1, -1)], -1)
            v = torch.einsum("kc,hcd->hkd", kv_c, W_UV)             # [H, keys, 128]
            qb = q[qsl[i]:qsl[i + 1]].float().transpose(0, 1)       # [H, n, 192]
            # Bottom-right causal: query t of n sees keys [0, keys - n + t].
            mask = (torch.arange(keys, device=DEV)[None, :]
                    <= torch.arange(n, device=DEV)[:, None] + keys - n)
            if impl.fp8_query and n == impl.decode_q_len:
                # An fp8 query is rounded after the absorb: attend in the
                # latent space with the decode's own e4m3 q (equal to the
                # un-absorbed form in exact arithmetic).
                qa = impl.decode_query(q[qsl[i]:qsl[i + 1]]).float() * impl.q_scale
                s = torch.einsum("hnc,kc->hnk", qa, latent) * impl.scale
                p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
                o = torch.einsum("hnk,kc,hcd->hnd", p, kv_c, W_UV)
                ref[qsl[i]:qsl[i + 1]] = o.transpose(0, 1).reshape(n, -1)
                # bf16 SDPA of the same latent-space attention: the error scale.
                o = F.scaled_dot_product_attention(
                    qa.to(DT)[None], latent.to(DT).expand(1, H, -1, -1),
                    kv_c.to(DT).expand(1, H, -1, -1), attn_mask=mask, scale=impl.scale)[0]
                o = torch.einsum("hnc,hcd->hnd", o.float(), W_UV)
                bf[qsl[i]:qsl[i + 1]] = o.transpose(0, 1).reshape(n, -1)
                continue
            with sdpa_kernel(SDPBackend.MATH):
                o = F.scaled_dot_product_attention(qb[None], k[None], v[None], attn_mask=mask,
                                                   scale=impl.scale)[0]
            ref[qsl[i]:qsl[i + 1]] = o.transpose(0, 1).reshape(n, -1)
            o = F.scaled_dot_product_attention(qb.to(DT)[None], k.to(DT)[None], v.to(DT)[None],
                                               attn_mask=mask, scale=impl.scale)[0]
            bf[qsl[i]:qsl[i + 1]] = o.transpose(0, 1).reshape(n, -1).float()
        return ref, bf


def check(out, n, ref, bf):
    got = out[:n].float()
    untouched = bool(torch.isnan(out[n:]).all()) if out.shape[0] > n else True
    unwritten = int(torch.isnan(got).sum())
    err = (got - ref).abs().max().item()
    sdpa_err = (bf - ref).abs().max().item()
    ok = unwritten == 0 and untouched and err <= max(ATOL, SDPA_FACTOR * sdpa_err)
    return dict(max_abs_err=err, sdpa_bf16_max_abs_err=sdpa_err, unwritten=unwritten,
                padding_untouched=untouched, ok=ok)


def order(batch, decodes_first, q_len):
    """vLLM's reorder: decodes (q_len new tokens) at the front (v1) or the back (v0)."""
    dec = [b for b in batch if b[1] == q_len]
    pre = [b for b in batch if b[1] != q_len]
    return dec + pre if decodes_first else pre + dec


def run_config(heads, page, decodes_first, seed, kv="auto", spec=0, tile_q=None,
               fp8_query=False, background=False):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    W_UK = torch.randn(heads, be.QK_NOPE_HEAD_DIM, be.KV_LORA_RANK, generator=gen) \
        / math.sqrt(be.KV_LORA_RANK)
    W_UV = torch.randn(heads, be.KV_LORA_RANK, be.V_HEAD_DIM, generator=gen) \
        / math.sqrt(be.KV_LORA_RANK)
    impl = be.MlagenMLAImpl(heads, page, W_UK, W_UV, kv_cache_dtype=kv,
                            k_scale=0.05 if kv == "fp8" else 1.0, fp8_query=fp8_query,
                            q_scale=1 / 32, num_spec_tokens=spec, decode_tile_q=tile_q,
                            background=background)
    L = impl.decode_q_len
    max_tokens, max_batch = 2048, 16
    num_blocks = (4096 // page + 64) if page > 1 else 4096
    max_pages = 4096 // page + 2
    eng = Engine(impl, num_blocks, seed)
    builder = impl.make_builder(max_batch, max_tokens, max_pages, decodes_first)
    pad = 5  # output rows past the step's tokens: must stay NaN
    name = (f"H{heads} page{page} {'decodes-first' if decodes_first else 'prefills-first'}"
            + (" fp8" if kv == "fp8" else "") + (" fp8-q" if fp8_query else "")
            + (f" q_len{L}" if L > 1 else "")
            + "".join(f" tile_q{t}<={b}" for b, t in (tile_q or []))
            + (" background fetch" if background else ""))
    results = []

    def pinned(md):
        return int(md.decode.kernel.fields.get("tile_q", 0)) if md.decode else 0

    def step(batch, label):
        batch = order(batch, decodes_first, L)
        host, (q, kv_c, k_pe) = eng.schedule(batch)
        md = builder.build(**host)
        n = md.num_actual_tokens
        out = torch.full((n + pad, heads * be.V_HEAD_DIM), float("nan"), dtype=DT, device=DEV)
        impl.forward(q, kv_c, k_pe, eng.kv_cache, md, out)
        torch.cuda.synchronize()
        r = check(out, n, *eng.reference(batch, host, q))
        results.append(dict(config=name, step=label, decodes=md.num_decodes,
                            prefills=md.num_prefills, tokens=n, tile_q=pinned(md),
                            query_lens=[b[1] for b in batch], **r))
        return md

    # Mixed steps: ragged prompts, a chunked prefill (1000 then 500 with the
    # first chunk as context), tiny prompts, decodes of everything running.
    tiny = 3 if L == 2 else 2
    step([(0, 300), (1, 17), (2, 1000)], "prefill")
    step([(0, L), (1, L), (2, 500), (3, 65)], "mixed")
    step([(0, L), (1, L), (2, L), (3, L), (4, tiny)], "mixed")
    step([(0, L), (1, L), (2, L), (3, L), (4, L), (5, 130)], "mixed")
    step([(r, L) for r in range(6)], "decode")

    # CUDA graph: static inputs and output, one capture of the decode-only
    # forward (cache write, absorb, mlagen decode, W_UV), replayed after
    # build() wrote the next step's slot mapping, block table, seq_lens and plan.
    B, T = 6, 6 * L
    s_q = torch.zeros(T, heads, be.QK_HEAD_DIM, dtype=DT, device=DEV)
    s_kv = torch.zeros(T, be.KV_LORA_RANK, dtype=DT, device=DEV)
    s_pe = torch.zeros(T, 1, be.QK_ROPE_HEAD_DIM, dtype=DT, device=DEV)
    s_out = torch.full((T + pad, heads * be.V_HEAD_DIM), float("nan"), dtype=DT, device=DEV)
    batch = [(r, L) for r in range(B)]
    host, inputs = eng.schedule(batch)
    md = builder.build(**host)
    for s, t in zip((s_q, s_kv, s_pe), inputs):
        s.copy_(t)
    side = torch.cuda.Stream()  # warm-up on a side stream, as torch recommends
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        impl.forward(s_q, s_kv, s_pe, eng.kv_cache, md, s_out)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    r = check(s_out, T, *eng.reference(batch, host, inputs[0]))
    results.append(dict(config=name, step="graph warm-up (eager)", decodes=B, prefills=0,
                        tokens=T, tile_q=pinned(md), query_lens=[L] * B, **r))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        impl.forward(s_q, s_kv, s_pe, eng.kv_cache, md, s_out)
    for replay in range(3):
        host, inputs = eng.schedule(batch)
        builder.build(**host)   # writes the persistent buffers the graph reads
        for s, t in zip((s_q, s_kv, s_pe), inputs):
            s.copy_(t)
        graph.replay()
        torch.cuda.synchronize()
        replayed = s_out.clone()
        r = check(replayed, T, *eng.reference(batch, host, inputs[0]))
        # The same step eagerly (rewriting the same latents is idempotent).
        eager = torch.full_like(s_out, float("nan"))
        impl.forward(s_q, s_kv, s_pe, eng.kv_cache, builder.build(**host), eager)
        torch.cuda.synchronize()
        bitwise = bool(torch.equal(replayed[:T], eager[:T]))
        r["ok"] = r["ok"] and bitwise
        results.append(dict(config=name, step=f"graph replay {replay}", decodes=B, prefills=0,
                            tokens=T, tile_q=pinned(md), query_lens=[L] * B,
                            replay_equals_eager=bitwise, **r))
    return results


class DLPackOnly:
    """Exposes a tensor only through the DLPack protocol (as CuPy or JAX would)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, *args, **kwargs):
        return self._t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def binding_checks():
    """Kernel.prefill: DLPack inputs give the torch result; wrong device, dtype,
    layout or alignment raise ValueError/TypeError naming the argument."""
    import mlagen
    H, T = 16, 40
    q = torch.randn(T, H, 192, dtype=DT, device=DEV)
    k = torch.randn(T, H, 192, dtype=DT, device=DEV)
    v = torch.randn(T, H, 128, dtype=DT, device=DEV)
    cu = torch.tensor([0, 15, 40], dtype=torch.int32, device=DEV)
    out = torch.empty(T, H * 128, dtype=DT, device=DEV)
    lse = torch.empty(H, T, device=DEV)
    kernel = be._get_runtime().kernel(
        f"prefill qk=192 v=128 hq={H} hkv={H} mask=causal arch={mlagen.default_arch()}")
    kernel.prefill(q, k, v, out, cu, cu, 25, lse=lse)
    out2, lse2 = torch.empty_like(out), torch.empty_like(lse)
    kernel.prefill(*(DLPackOnly(t) for t in (q, k, v, out2, cu, cu)), 25, lse=DLPackOnly(lse2))
    torch.cuda.synchronize()
    rows = [dict(check="DLPack inputs equal torch inputs",
                 ok=bool(torch.equal(out, out2) and torch.equal(lse, lse2)))]
    # flash_attn's call with its defaults: out and lse allocated, 1/sqrt(192).
    out3, lse3 = be.flash_attn_varlen_func(q, k, v, cu, cu, 25, 25, causal=True,
                                           return_softmax_lse=True)
    rows.append(dict(check="flash_attn_varlen_func allocates out and lse, default scale",
                     ok=bool(out3.shape == (T, H, 128) and torch.equal(out3.view(T, -1), out)
                             and torch.equal(lse3, lse))))
    bad = [
        ("q on the CPU", dict(q=q.cpu()), "q must be on the GPU"),
        ("k fp16", dict(k=k.half()), "k must be torch.bfloat16"),
        ("v strided last dim", dict(v=torch.randn(T, H, 256, dtype=DT, device=DEV)[..., ::2]),
         "contiguous in its last dim"),
        ("q misaligned", dict(q=torch.randn(T * H * 192 + 1, dtype=DT, device=DEV)[1:].view(T, H, 192)),
         "16-byte aligned"),
        ("cu_seqlens int64", dict(cu_seqlens_q=cu.long()), "cu_seqlens_q must be torch.int32"),
        ("lse [T, H]", dict(lse=torch.empty(T, H, device=DEV)), "lse"),
        ("q wrong heads", dict(q=torch.randn(T, 8, 192, dtype=DT, device=DEV)), "heads"),
        ("a list for q", dict(q=[1, 2]), "q must be a torch tensor or support DLPack"),
    ]
    for what, change, needle in bad:
        args = dict(q=q, k=k, v=v, out=out, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=25,
                    lse=lse)
        args.update(change)
        try:
            kernel.prefill(**args)
            rows.append(dict(check=what, ok=False, error="no error"))
        except (ValueError, TypeError, mlagen.Error) as e:
            rows.append(dict(check=what, ok=needle in str(e), error=str(e)))
    torch.cuda.synchronize()
    return rows


def main():
    torch.manual_seed(0)
    print("device:", torch.cuda.get_device_name(), flush=True)
    results = []
    # (heads, page, decodes first, options): bf16 caches, fp8 caches (16 heads:
    # the e4m3 product kernel; 128 heads: 64-row widened at page 64, 32-row
    # blocks at page 1), two query tokens a decode, and decode kernels pinned
    # to 16-row blocks for steps of at most 4 decodes (so both kernels run;
    # the default pins, default_decode_tile_q, would take 16 rows for every
    # step here).
    configs = [(16, 64, True, {}), (128, 1, False, {}), (128, 64, True, {}), (16, 1, True, {}),
               (16, 64, True, dict(kv="fp8")),
               (128, 64, True, dict(kv="fp8", tile_q=[(4, 16)])),
               (128, 1, False, dict(kv="fp8")),
               (16, 64, False, dict(kv="fp8", spec=1, tile_q=[(4, 16)])),
               (16, 1, True, dict(spec=1, tile_q=[(4, 16)])),
               (16, 64, True, dict(kv="fp8", fp8_query=True, spec=1, tile_q=[(4, 16)])),
               (128, 1, False, dict(kv="fp8", fp8_query=True)),
               # kernels fetched on a thread, taken at first use (signatures
               # no earlier config fetched, so the fetch is cold)
               (32, 16, False, dict(background=True)),
               (32, 64, True, dict(kv="fp8", fp8_query=True, spec=1, background=True))]
    for i, (heads, page, first, opts) in enumerate(configs):
        try:
            results += run_config(heads, page, first, seed=100 + i, **opts)
        except Exception as e:  # report and go on: one config's failure is one row
            import traceback
            traceback.print_exc()
            results.append(dict(config=f"H{heads} page{page}", step="exception",
                                error=f"{type(e).__name__}: {e}", ok=False))
    checks = binding_checks()
    for c in checks:
        print(f"{'PASS' if c['ok'] else 'FAIL'} binding: {c['check']}: {c.get('error', '')}")
    print(f"\n{'config':<52} {'step':<22} {'dec':>3} {'pre':>3} {'tok':>5} {'tq':>2} "
          f"{'mlagen err':>10} {'sdpa bf16':>10}  result")
    for r in results:
        if "max_abs_err" in r:
            print(f"{r['config']:<52} {r['step']:<22} {r['decodes']:>3} {r['prefills']:>3} "
                  f"{r['tokens']:>5} {r['tile_q']:>2} "
                  f"{r['max_abs_err']:>10.2e} {r['sdpa_bf16_max_abs_err']:>10.2e}"
                  f"  {'PASS' if r['ok'] else 'FAIL'}"
                  + ("" if r.get("replay_equals_eager", True) else " (replay != eager)"))
        else:
            print(f"{r['config']:<52} {r['step']:<22} FAIL {r.get('error')}")
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "vllm_backend.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(),
                       tolerance=f"max abs err <= max({ATOL}, {SDPA_FACTOR} x bf16 SDPA's)",
                       results=results, binding_checks=checks), f, indent=1)
    failed = [r for r in results + checks if not r["ok"]]
    print(f"{len(results) + len(checks) - len(failed)}/{len(results) + len(checks)} steps and "
          "binding checks pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
