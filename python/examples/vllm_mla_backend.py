"""An MLA attention backend shaped like vLLM's (v1 MLACommonImpl / FlashMLA),
running on mlagen kernels. An example of integration, not a vLLM plugin: the
class and field names follow vLLM so that wiring it into
vllm/v1/attention/backends/mla/ is a matter of renaming, but it imports
nothing from vLLM.

Per step the engine gives host-side facts (CommonAttentionMetadata in vLLM):

    query_start_loc  [num_reqs + 1]  cumulative new tokens per request
    seq_lens         [num_reqs]      keys per request after this step (context + new)
    block_table      [num_reqs, max_pages] int32 page ids of the paged latent cache
    slot_mapping     [num_actual_tokens] where each new token's latent goes
                     (page_id * page_size + offset)

Requests with exactly 1 + num_spec_tokens new tokens are decodes; the builder
expects them grouped at one end of the batch, decodes first (vLLM v1 reorders the batch
so) or prefills first (v0), and says which via `decodes_first`.

forward(q, kv_c_normed, k_pe, kv_cache, metadata, output):

 1. writes the new tokens' latent [kv_c | k_pe] (576 wide) into the cache at
    slot_mapping (mlagen's kv_cache_write, vLLM's concat_and_cache_mla; it
    takes vLLM's int64 slot_mapping as is),
 2. prefill tokens: gathers each prefill request's latent (context + new) from
    the cache, up-projects it to k = [W_UK kv_c | k_pe] (192 = 128 + 64) and
    v = W_UV kv_c (128) per head, and calls `flash_attn_varlen_func` (mlagen's
    varlen prefill, causal, bottom-right aligned, so context keys before the new
    chunk need no separate pass and no merge_attn_states),
 3. decode tokens: absorbs W_UK into q (q_nope W_UK -> 512, then [.. | q_pe] ->
    576), runs mlagen's absorbed paged decode over the latent cache with a
    DecodePlan built once for max_batch and updated by the builder each step,
    and projects the 512-wide latent result out with W_UV,

writing output[:num_actual_tokens] ([tokens, heads * 128]) in place. The
decode half reads only persistent device buffers (the builder's), so it can
be captured in a CUDA graph and replayed after the next build().

Weights: W_UK [heads, 128, 512] and W_UV [heads, 512, 128], the two halves
of vLLM's kv_b_proj ([heads * (128 + 128), 512]) split per head.

kv_cache_dtype="fp8" (vLLM's --kv-cache-dtype fp8): the cache holds e4m3
(torch.float8_e4m3fn) latents stored as x / k_scale (k_scale: the layer's
per-tensor scale, vLLM's _k_scale_float). The decode reads it with mlagen's
fp8-cache kernel (bf16 q); a prefill gathers its context from the cache
dequantised and takes its new tokens' latents from the step's inputs, as
vLLM's MLA prefill does. With fp8_query the decode's absorbed q is e4m3 too
(stored as x / q_scale, vLLM's _q_scale), so the kernel multiplies e4m3 by
e4m3 on the tensor cores.

num_spec_tokens > 0 (speculative decoding): a decode request carries 1 +
num_spec_tokens query tokens (vLLM's uniform decode query length); requests
with any other count go through the prefill path.

Decode kernels by batch size: vLLM captures a CUDA graph per batch size, so
a decode may take a different kernel per batch range at no cost per step.
The builder keeps one DecodePlan per kernel and picks by the step's decode
count. `decode_tile_q` lists (largest batch, tile_q) pairs, smallest first;
batches past the last pair take the compiler's choice. The default comes
from H200 measurements (python/examples/README.md).
"""
import math
from dataclasses import dataclass
from typing import Optional

import torch

import mlagen

KV_LORA_RANK = 512
QK_NOPE_HEAD_DIM = 128
QK_ROPE_HEAD_DIM = 64
QK_HEAD_DIM = QK_NOPE_HEAD_DIM + QK_ROPE_HEAD_DIM  # 192
V_HEAD_DIM = 128
LATENT_DIM = KV_LORA_RANK + QK_ROPE_HEAD_DIM       # 576


def default_decode_tile_q(num_heads, q_len, page_size, kv_cache_dtype, fp8_query, arch):
    """Pinned q rows a block by batch range, where an H200 ran the layer's
    decode forward faster (bench_vllm_backend.py; python/examples/README.md).
    All on an fp8 cache. With bf16 q: 32 rows a request (16 heads at q_len
    2, 32 heads) in 16-row e4m3 blocks up to 64 requests (8-11% faster); 128
    rows at pages of 64 in 16-row blocks up to 16 requests (8-21%). With an
    e4m3 q: 32 rows in 16-row blocks up to 16 requests (7%). Elsewhere the
    compiler's block wins (e4m3 q at 64 rows or more: its 64-row seesaw, 2%
    slower than 32-row blocks only at B32 H16 q_len 4 on an H100)."""
    if arch != "sm_90a" or kv_cache_dtype != "fp8":
        return []
    rows = num_heads * q_len
    if fp8_query:
        return [(16, 16)] if rows == 32 else []
    if rows == 32:
        return [(64, 16)]
    if rows == 128 and page_size == 64:
        return [(16, 16)]
    return []


# --- flash_attn_varlen_func on mlagen ---------------------------------------

_runtime = None
_prefill_kernels = {}


def _get_runtime():
    global _runtime
    if _runtime is None:
        _runtime = mlagen.Runtime()
    return _runtime


def _prefill_key(dqk, dv, hq, hkv, causal, dtype, device):
    device = torch.device(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return (dqk, dv, hq, hkv, bool(causal), dtype, index)


def _prefill_signature(key):
    dqk, dv, hq, hkv, causal, dtype, index = key
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    return (f"prefill qk={dqk} v={dv} hq={hq} hkv={hkv} mask={'causal' if causal else 'none'} "
            f"lse=1 q={name} kv={name} out={name} arch={mlagen.default_arch(torch.device('cuda', index))}")


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           softmax_scale=None, causal=False, return_softmax_lse=False,
                           out=None):
    """FlashAttention's varlen call on mlagen: q [total_q, hq, dqk], k
    [total_k, hkv, dqk], v [total_k, hkv, dv] (dv may differ from dqk: no
    padding of V to 192), cu_seqlens int32 on the device. Causal masks are
    bottom-right aligned. Returns out [total_q, hq, dv] (written into `out`
    when given) and, with return_softmax_lse, also lse [hq, total_q] fp32
    (natural log), as flash_attn's varlen function. max_seqlen_k is accepted
    for the signature's sake; mlagen does not need it."""
    hq, dqk = q.shape[1], q.shape[2]
    hkv, dv = k.shape[1], v.shape[2]
    key = _prefill_key(dqk, dv, hq, hkv, causal, q.dtype, q.device)
    kernel = _prefill_kernels.get(key)
    if kernel is None:
        kernel = _prefill_kernels[key] = _get_runtime().kernel(_prefill_signature(key))
    if out is None:
        out = torch.empty(q.shape[0], hq, dv, dtype=q.dtype, device=q.device)
    lse = (torch.empty(hq, q.shape[0], dtype=torch.float32, device=q.device)
           if return_softmax_lse else None)
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(dqk)
    kernel.prefill(q, k, v, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, lse=lse,
                   softmax_scale=softmax_scale)
    return (out, lse) if return_softmax_lse else out


# --- metadata ------------------------------------------------------------------

@dataclass
class MLAPrefillMetadata:
    num_reqs: int
    num_tokens: int
    token_start: int                 # first prefill token in the step's token order
    query_start_loc: torch.Tensor    # [num_reqs + 1] int32, device, prefill-local
    key_start_loc: torch.Tensor      # [num_reqs + 1] int32, device: cumulative seq_lens
    key_slots: torch.Tensor          # [total keys] int64, device: cache slot of every key
    new_key_rows: Optional[torch.Tensor]  # [num_tokens] int64, device: each new token's
                                          # key row (fp8 caches only)
    max_query_len: int
    max_seq_len: int


@dataclass
class MLADecodeMetadata:
    num_reqs: int
    token_start: int
    block_table: torch.Tensor        # [num_reqs, max_pages] int32 view of a persistent buffer
    seq_lens: torch.Tensor           # [num_reqs] int32 view of a persistent buffer
    kernel: "mlagen.Kernel"          # the decode kernel for this batch size
    plan: mlagen.DecodePlan          # its plan, updated for this step


@dataclass
class MLAAttentionMetadata:
    num_actual_tokens: int
    slot_mapping: torch.Tensor       # [num_actual_tokens] int64 view of a persistent buffer
    num_decodes: int
    num_decode_tokens: int
    num_prefills: int
    num_prefill_tokens: int
    decodes_first: bool
    prefill: Optional[MLAPrefillMetadata] = None
    decode: Optional[MLADecodeMetadata] = None


class MLAMetadataBuilder:
    """Turns a step's host facts into device metadata. Owns the persistent
    device buffers the decode path reads (block table, seq_lens, slot
    mapping, the DecodePlan's buffers), sized once for max_batch requests,
    max_tokens tokens and max_pages pages per request, so a captured graph
    sees each build()'s values."""

    def __init__(self, impl, max_batch, max_tokens, max_pages, decodes_first=True,
                 device="cuda"):
        self.impl = impl
        self.device = torch.device(device)
        self.decodes_first = decodes_first
        self.max_batch, self.max_tokens, self.max_pages = max_batch, max_tokens, max_pages
        self.block_table = torch.zeros(max_batch, max_pages, dtype=torch.int32, device=device)
        self.seq_lens = torch.zeros(max_batch, dtype=torch.int32, device=device)
        self.slot_mapping = torch.zeros(max_tokens, dtype=torch.int64, device=device)
        # One plan per decode kernel, each sized once for the largest batch it
        # takes (the planner sizes its buffers by it).
        self.plans = [(limit, kernel, mlagen.DecodePlan(
            kernel, max_batch=min(limit or max_batch, max_batch), device=device))
            for limit, kernel in impl.decode_kernels]

    @staticmethod
    def _h2d(dst, src):
        """Async copy of a host tensor into the head of a persistent buffer."""
        src = src.to(dst.dtype).pin_memory()
        dst.view(-1)[:src.numel()].copy_(src.view(-1), non_blocking=True)

    def build(self, query_start_loc, seq_lens, block_table, slot_mapping):
        """query_start_loc [num_reqs + 1], seq_lens [num_reqs], block_table
        [num_reqs, >= pages] and slot_mapping [num_tokens]: host tensors or
        lists for the step (vLLM's CommonAttentionMetadata *_cpu fields)."""
        qsl = torch.as_tensor(query_start_loc, dtype=torch.int64)
        lens = torch.as_tensor(seq_lens, dtype=torch.int64)
        table = torch.as_tensor(block_table, dtype=torch.int32)
        slots = torch.as_tensor(slot_mapping, dtype=torch.int64)
        num_reqs = lens.numel()
        query_lens = qsl[1:] - qsl[:-1]
        num_tokens = int(qsl[-1])
        if num_reqs > self.max_batch or num_tokens > self.max_tokens:
            raise ValueError(f"{num_reqs} requests / {num_tokens} tokens exceed the builder's "
                             f"{self.max_batch} / {self.max_tokens}")
        if slots.numel() != num_tokens:
            raise ValueError(f"slot_mapping holds {slots.numel()} slots for {num_tokens} tokens")
        q_len = self.impl.decode_q_len
        is_decode = query_lens == q_len
        num_decodes = int(is_decode.sum())
        # Decodes must form one group at the front (v1) or the back (v0).
        expect = torch.zeros(num_reqs, dtype=torch.bool)
        if self.decodes_first:
            expect[:num_decodes] = True
        else:
            expect[num_reqs - num_decodes:] = True
        if not torch.equal(is_decode, expect):
            raise ValueError(f"decodes (query_len {q_len}) must be grouped "
                             f"{'first' if self.decodes_first else 'last'}: query lens "
                             f"{query_lens.tolist()}")
        dec = slice(0, num_decodes) if self.decodes_first else slice(num_reqs - num_decodes, num_reqs)
        pre = slice(num_decodes, num_reqs) if self.decodes_first else slice(0, num_reqs - num_decodes)
        num_decode_tokens = num_decodes * q_len
        decode_token_start = 0 if self.decodes_first else num_tokens - num_decode_tokens
        prefill_token_start = num_decode_tokens if self.decodes_first else 0

        self._h2d(self.slot_mapping, slots)
        md = MLAAttentionMetadata(
            num_actual_tokens=num_tokens, slot_mapping=self.slot_mapping[:num_tokens],
            num_decodes=num_decodes, num_decode_tokens=num_decode_tokens,
            num_prefills=num_reqs - num_decodes,
            num_prefill_tokens=num_tokens - num_decode_tokens,
            decodes_first=self.decodes_first)

        if num_decodes:
            dlens = lens[dec]
            dtable = table[dec]
            width = dtable.shape[1]
            if width > self.max_pages:
                raise ValueError(f"block_table has {width} columns, the builder {self.max_pages}")
            self._h2d(self.seq_lens, dlens)
            # Rows are max_pages wide in the persistent table.
            padded = torch.zeros(num_decodes, self.max_pages, dtype=torch.int32)
            padded[:, :width] = dtable
            self._h2d(self.block_table, padded)
            limit, kernel, plan = next(p for p in self.plans if not p[0] or num_decodes <= p[0])
            plan.update(dlens.to(torch.int32))
            md.decode = MLADecodeMetadata(
                num_reqs=num_decodes, token_start=decode_token_start,
                block_table=self.block_table[:num_decodes],
                seq_lens=self.seq_lens[:num_decodes], kernel=kernel, plan=plan)

        if md.num_prefills:
            page = self.impl.page_size
            plens = lens[pre]
            pq = query_lens[pre]
            ptable = table[pre].long()
            # Every key of every prefill request (context + new): its cache slot.
            key_slots = torch.cat([ptable[i, torch.arange(int(n)) // page] * page
                                   + torch.arange(int(n)) % page
                                   for i, n in enumerate(plens.tolist())])
            zero = torch.zeros(1, dtype=torch.int64)
            # The new tokens are each request's last query_len keys (an fp8
            # cache's prefill takes them from the step's inputs).
            new_key_rows = None
            if self.impl.fp8:
                key_end = plens.cumsum(0)
                new_key_rows = torch.cat([torch.arange(int(e - n), int(e)) for e, n in
                                          zip(key_end.tolist(), pq.tolist())]).to(
                    self.device, non_blocking=True)
            md.prefill = MLAPrefillMetadata(
                num_reqs=md.num_prefills, num_tokens=md.num_prefill_tokens,
                token_start=prefill_token_start,
                query_start_loc=torch.cat([zero, pq.cumsum(0)]).to(torch.int32).to(
                    self.device, non_blocking=True),
                key_start_loc=torch.cat([zero, plens.cumsum(0)]).to(torch.int32).to(
                    self.device, non_blocking=True),
                key_slots=key_slots.to(self.device, non_blocking=True),
                new_key_rows=new_key_rows,
                max_query_len=int(pq.max()), max_seq_len=int(plens.max()))
        return md


# --- the attention implementation ---------------------------------------------

class MlagenMLAImpl:
    """vLLM's MLACommonImpl on mlagen. num_heads q heads, one latent KV head;
    page_size keys per cache block (64 or 1 for the default kernels).
    kv_cache_dtype "auto" (the model's dtype) or "fp8" (e4m3, stored as
    x / k_scale); fp8_query: the decode's q in e4m3 too (x / q_scale; fp8
    caches only); num_spec_tokens draft tokens a decode request;
    decode_tile_q: [(largest batch, tile_q)] pinned blocks by batch range
    (None: default_decode_tile_q); background: fetch the kernels on a thread
    (Runtime.kernels_async) and wait for them at first use, so that a cold
    compile overlaps what the engine does next (loading the weights)."""

    def __init__(self, num_heads, page_size, W_UK, W_UV, scale=None, dtype=torch.bfloat16,
                 device="cuda", kv_cache_dtype="auto", k_scale=1.0, fp8_query=False,
                 q_scale=1.0, num_spec_tokens=0, decode_tile_q=None, background=False):
        assert W_UK.shape == (num_heads, QK_NOPE_HEAD_DIM, KV_LORA_RANK), W_UK.shape
        assert W_UV.shape == (num_heads, KV_LORA_RANK, V_HEAD_DIM), W_UV.shape
        if kv_cache_dtype not in ("auto", "fp8"):
            raise ValueError(f"kv_cache_dtype must be 'auto' or 'fp8', got {kv_cache_dtype!r}")
        if fp8_query and kv_cache_dtype != "fp8":
            raise ValueError("fp8_query needs kv_cache_dtype='fp8'")
        if num_spec_tokens < 0:
            raise ValueError(f"num_spec_tokens must be >= 0, got {num_spec_tokens}")
        self.num_heads, self.page_size, self.dtype = num_heads, page_size, dtype
        self.kv_cache_dtype = kv_cache_dtype
        self.fp8 = kv_cache_dtype == "fp8"
        self.k_scale = float(k_scale)
        self.fp8_query, self.q_scale = fp8_query, float(q_scale)
        self.decode_q_len = 1 + num_spec_tokens
        self.scale = scale if scale is not None else 1.0 / math.sqrt(QK_HEAD_DIM)
        self.W_UK = W_UK.to(device, dtype).contiguous()
        self.W_UV = W_UV.to(device, dtype).contiguous()
        # The decode's absorb as one product: [q_nope | q_pe] x [[W_UK, 0], [0, I]]
        # gives [q_nope W_UK | q_pe] (q_pe times 1 plus zeros: exact), so q
        # needs no concatenation.
        self.W_UK_pe = torch.zeros(num_heads, QK_HEAD_DIM, LATENT_DIM, dtype=dtype, device=device)
        self.W_UK_pe[:, :QK_NOPE_HEAD_DIM, :KV_LORA_RANK] = self.W_UK
        self.W_UK_pe[:, QK_NOPE_HEAD_DIM:, KV_LORA_RANK:] = torch.eye(QK_ROPE_HEAD_DIM)
        # For the prefill up-projection of the latent to per-head k_nope and v.
        self.W_UK_flat = self.W_UK.reshape(num_heads * QK_NOPE_HEAD_DIM, KV_LORA_RANK)
        self.W_UV_flat = self.W_UV.permute(0, 2, 1).reshape(num_heads * V_HEAD_DIM, KV_LORA_RANK)
        name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
        kv = "fp8e4m3" if self.fp8 else name
        arch = mlagen.default_arch(device)
        if decode_tile_q is None:
            decode_tile_q = default_decode_tile_q(num_heads, self.decode_q_len, page_size,
                                                  kv_cache_dtype, fp8_query, arch)
        rt = _get_runtime()
        decode = (f"decode qk={LATENT_DIM} v={KV_LORA_RANK} hq={num_heads} "
                  f"q_len={self.decode_q_len} page={page_size} mask=causal lse=0 "
                  f"q={'fp8e4m3' if fp8_query else name} kv={kv} out={name}")
        ranges = sorted(decode_tile_q) + [(None, None)]
        wanted = [f"{decode}{f' tile_q={tile_q}' if tile_q else ''} arch={arch}" for _, tile_q in ranges]
        wanted.append(f"kv_cache_write qk={LATENT_DIM} v={KV_LORA_RANK} page={page_size} "
                      + (f"in={name} " if self.fp8 else "") + f"kv={kv} arch={arch}")
        if fp8_query:
            # The e4m3 q in one pass: the MLA cache write rounds rows of 576
            # ([512 | 64]) to fp8(x / scale), saturated, at given slots, so
            # with pages of one row and slots 0..rows-1 it quantises q.
            wanted.append(f"kv_cache_write qk={LATENT_DIM} v={KV_LORA_RANK} page=1 in={name} "
                          f"kv=fp8e4m3 arch={arch}")
        # The prefill's kernel too (flash_attn_varlen_func's), fetched with
        # the rest: cold, the compiles run side by side.
        prefill_key = _prefill_key(QK_HEAD_DIM, V_HEAD_DIM, num_heads, num_heads, True, dtype, device)
        signatures = wanted + [_prefill_signature(prefill_key)]
        self._ranges, self._prefill_key = ranges, prefill_key
        self._pending = rt.kernels_async(signatures) if background else None
        if not background:
            self._take(rt.kernels(signatures))
        # kv_cache_write reads the scale from the device (vLLM's _k_scale).
        self.k_scale_t = torch.tensor([self.k_scale], dtype=torch.float32, device=device)
        if fp8_query:
            self.q_scale_t = torch.tensor([self.q_scale], dtype=torch.float32, device=device)
            self.q_slots = torch.arange(0, dtype=torch.int32, device=device)

    def _take(self, kernels):
        _prefill_kernels[self._prefill_key] = kernels.pop()
        # (largest batch or None, kernel), smallest range first.
        self._decode_kernels = [(limit, k) for (limit, _), k in zip(self._ranges, kernels)]
        self._cache_write_kernel = kernels[len(self._ranges)]
        self._q_round_kernel = kernels[-1] if self.fp8_query else None

    def _fetched(self):
        """Waits, the first time, for the kernels a background fetch started."""
        if self._pending is not None:
            self._take(self._pending.result())
            self._pending = None
        return self

    decode_kernels = property(lambda self: self._fetched()._decode_kernels)
    cache_write_kernel = property(lambda self: self._fetched()._cache_write_kernel)
    q_round_kernel = property(lambda self: self._fetched()._q_round_kernel)

    def new_kv_cache(self, num_blocks, device="cuda"):
        """An empty latent cache [num_blocks, page_size, 576] of this impl's dtype."""
        dtype = torch.float8_e4m3fn if self.fp8 else self.dtype
        return torch.empty(num_blocks, self.page_size, LATENT_DIM, dtype=dtype, device=device)

    def decode_query(self, q_rows):
        """q_rows [tokens, H, 192] -> the decode's q, head-major [H, tokens, 576]:
        [q_nope W_UK | q_pe] as one product ([H, tokens, 192] x [H, 192, 576]);
        with fp8_query e4m3(x / q_scale), saturated."""
        q_abs = torch.bmm(q_rows.transpose(0, 1), self.W_UK_pe)
        if not self.fp8_query:
            return q_abs
        rows = q_abs.shape[0] * q_abs.shape[1]
        if self.q_slots.numel() < rows:  # grows once per larger batch (before capture)
            self.q_slots = torch.arange(rows, dtype=torch.int32, device=q_abs.device)
        flat = q_abs.view(rows, LATENT_DIM)
        q8 = torch.empty(q_abs.shape, dtype=torch.float8_e4m3fn, device=q_abs.device)
        self.q_round_kernel.kv_cache_write(flat[:, :KV_LORA_RANK], flat[:, KV_LORA_RANK:],
                                           q8.view(rows, 1, LATENT_DIM), self.q_slots[:rows],
                                           scale=self.q_scale_t)
        return q8

    def make_builder(self, max_batch, max_tokens, max_pages, decodes_first=True):
        return MLAMetadataBuilder(self, max_batch, max_tokens, max_pages, decodes_first)

    def write_latent_cache(self, kv_c_normed, k_pe, kv_cache, slot_mapping):
        """concat_and_cache_mla: kv_cache.view(-1, 576)[slot] = [kv_c | k_pe]
        for slot >= 0 (int64 slots, -1 skips a padded token)."""
        self.cache_write_kernel.kv_cache_write(
            kv_c_normed, k_pe.reshape(-1, QK_ROPE_HEAD_DIM), kv_cache, slot_mapping,
            scale=self.k_scale_t if self.fp8 else None)

    def forward(self, q, kv_c_normed, k_pe, kv_cache, md: MLAAttentionMetadata, output):
        """q [tokens, heads, 192] (rope applied), kv_c_normed [tokens, 512],
        k_pe [tokens, 1, 64] or [tokens, 64], kv_cache [num_blocks, page, 576]
        (or [num_blocks, page, 1, 576]), output [>= tokens, heads * 128]: rows
        [0, num_actual_tokens) are written, the rest left alone."""
        n = md.num_actual_tokens
        self._fetched()  # the prefill's kernel too
        if kv_cache.dim() == 4:
            kv_cache = kv_cache.squeeze(2)
        self.write_latent_cache(kv_c_normed[:n], k_pe[:n], kv_cache, md.slot_mapping)
        if md.prefill is not None:
            self._forward_prefill(q, kv_c_normed, k_pe, kv_cache, md.prefill, output)
        if md.decode is not None:
            self._forward_decode(q, kv_cache, md.decode, output)
        return output

    def _forward_prefill(self, q, kv_c_normed, k_pe, kv_cache, p: MLAPrefillMetadata, output):
        H = self.num_heads
        rows = slice(p.token_start, p.token_start + p.num_tokens)
        if self.fp8:
            # Context dequantised from the cache, the new tokens' latents
            # from the step's inputs (vLLM's MLA prefill does the same).
            raw = kv_cache.view(torch.uint8).view(-1, LATENT_DIM).index_select(0, p.key_slots)
            latent = (raw.view(torch.float8_e4m3fn).float() * self.k_scale).to(q.dtype)
            latent[p.new_key_rows] = torch.cat(
                [kv_c_normed[rows], k_pe[rows].reshape(-1, QK_ROPE_HEAD_DIM)], -1)
        else:
            latent = kv_cache.view(-1, LATENT_DIM).index_select(0, p.key_slots)  # [keys, 576]
        kv_c, k_pe = latent[:, :KV_LORA_RANK], latent[:, KV_LORA_RANK:]
        keys = latent.shape[0]
        k = torch.empty(keys, H, QK_HEAD_DIM, dtype=q.dtype, device=q.device)
        k[:, :, :QK_NOPE_HEAD_DIM] = (kv_c @ self.W_UK_flat.t()).view(keys, H, QK_NOPE_HEAD_DIM)
        k[:, :, QK_NOPE_HEAD_DIM:] = k_pe[:, None, :]
        v = (kv_c @ self.W_UV_flat.t()).view(keys, H, V_HEAD_DIM)
        out = output[rows].view(p.num_tokens, H, V_HEAD_DIM)  # the caller's rows, in place
        flash_attn_varlen_func(q[rows], k, v, p.query_start_loc, p.key_start_loc,
                               p.max_query_len, p.max_seq_len, softmax_scale=self.scale,
                               causal=True, out=out)

    def _forward_decode(self, q, kv_cache, d: MLADecodeMetadata, output):
        H, B, L = self.num_heads, d.num_reqs, self.decode_q_len
        rows = slice(d.token_start, d.token_start + B * L)
        # Head-major buffers: the products read and write them whole, and the
        # decode takes any strides, so no copies sit between the kernels.
        q_abs = self.decode_query(q[rows])
        latent_out = torch.empty(H, B * L, KV_LORA_RANK, dtype=q.dtype, device=q.device)
        as_blhd = lambda t: t.view(H, B, L, t.shape[-1]).permute(1, 2, 0, 3)
        d.kernel.decode(as_blhd(q_abs), kv_cache, as_blhd(latent_out), d.block_table,
                        d.seq_lens, d.plan, self.scale, kv_scale=self.k_scale if self.fp8 else 1.0,
                        q_scale=self.q_scale if self.fp8_query else 1.0)
        # Un-absorb with W_UV: [H, B L, 512] x [H, 512, 128] -> the output rows
        # [B L, H * 128] seen as [H, B L, 128] (row stride H * 128).
        torch.bmm(latent_out, self.W_UV,
                  out=output[rows].view(B * L, H, V_HEAD_DIM).transpose(0, 1))
