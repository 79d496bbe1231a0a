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

Requests with exactly one new token are decodes; the builder expects them
grouped at one end of the batch, decodes first (vLLM v1 reorders the batch
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


def mlagen_arch(device=None):
    major, minor = torch.cuda.get_device_capability(device)
    return "sm_90a" if (major, minor) >= (9, 0) else "sm_80"


# --- flash_attn_varlen_func on mlagen ---------------------------------------

_runtime = None
_prefill_kernels = {}


def _get_runtime():
    global _runtime
    if _runtime is None:
        _runtime = mlagen.Runtime()
    return _runtime


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
    dtype = {torch.bfloat16: "bf16", torch.float16: "fp16"}[q.dtype]
    key = (dqk, dv, hq, hkv, bool(causal), dtype, q.device.index)
    kernel = _prefill_kernels.get(key)
    if kernel is None:
        kernel = _get_runtime().kernel(
            f"prefill qk={dqk} v={dv} hq={hq} hkv={hkv} mask={'causal' if causal else 'none'} "
            f"lse=1 q={dtype} kv={dtype} out={dtype} arch={mlagen_arch(q.device)}")
        _prefill_kernels[key] = kernel
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
    max_query_len: int
    max_seq_len: int


@dataclass
class MLADecodeMetadata:
    num_reqs: int
    token_start: int
    block_table: torch.Tensor        # [num_reqs, max_pages] int32 view of a persistent buffer
    seq_lens: torch.Tensor           # [num_reqs] int32 view of a persistent buffer
    plan: mlagen.DecodePlan


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
        # Once for the largest batch: the planner sizes its buffers by it.
        self.plan = mlagen.DecodePlan(impl.decode_kernel, max_batch=max_batch, device=device)

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
        is_decode = query_lens == 1
        num_decodes = int(is_decode.sum())
        # Decodes must form one group at the front (v1) or the back (v0).
        expect = torch.zeros(num_reqs, dtype=torch.bool)
        if self.decodes_first:
            expect[:num_decodes] = True
        else:
            expect[num_reqs - num_decodes:] = True
        if not torch.equal(is_decode, expect):
            raise ValueError("decodes (query_len 1) must be grouped "
                             f"{'first' if self.decodes_first else 'last'}: query lens "
                             f"{query_lens.tolist()}")
        dec = slice(0, num_decodes) if self.decodes_first else slice(num_reqs - num_decodes, num_reqs)
        pre = slice(num_decodes, num_reqs) if self.decodes_first else slice(0, num_reqs - num_decodes)
        num_decode_tokens = num_decodes
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
            self.plan.update(dlens.to(torch.int32))
            md.decode = MLADecodeMetadata(
                num_reqs=num_decodes, token_start=decode_token_start,
                block_table=self.block_table[:num_decodes],
                seq_lens=self.seq_lens[:num_decodes], plan=self.plan)

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
            md.prefill = MLAPrefillMetadata(
                num_reqs=md.num_prefills, num_tokens=md.num_prefill_tokens,
                token_start=prefill_token_start,
                query_start_loc=torch.cat([zero, pq.cumsum(0)]).to(torch.int32).to(
                    self.device, non_blocking=True),
                key_start_loc=torch.cat([zero, plens.cumsum(0)]).to(torch.int32).to(
                    self.device, non_blocking=True),
                key_slots=key_slots.to(self.device, non_blocking=True),
                max_query_len=int(pq.max()), max_seq_len=int(plens.max()))
        return md


# --- the attention implementation ---------------------------------------------

class MlagenMLAImpl:
    """vLLM's MLACommonImpl on mlagen. num_heads q heads, one latent KV head;
    page_size keys per cache block (64 or 1 for the default kernels)."""

    def __init__(self, num_heads, page_size, W_UK, W_UV, scale=None, dtype=torch.bfloat16,
                 device="cuda"):
        assert W_UK.shape == (num_heads, QK_NOPE_HEAD_DIM, KV_LORA_RANK), W_UK.shape
        assert W_UV.shape == (num_heads, KV_LORA_RANK, V_HEAD_DIM), W_UV.shape
        self.num_heads, self.page_size, self.dtype = num_heads, page_size, dtype
        self.scale = scale if scale is not None else 1.0 / math.sqrt(QK_HEAD_DIM)
        self.W_UK = W_UK.to(device, dtype).contiguous()
        self.W_UV = W_UV.to(device, dtype).contiguous()
        # For the prefill up-projection of the latent to per-head k_nope and v.
        self.W_UK_flat = self.W_UK.reshape(num_heads * QK_NOPE_HEAD_DIM, KV_LORA_RANK)
        self.W_UV_flat = self.W_UV.permute(0, 2, 1).reshape(num_heads * V_HEAD_DIM, KV_LORA_RANK)
        name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
        self.decode_kernel = _get_runtime().kernel(
            f"decode qk={LATENT_DIM} v={KV_LORA_RANK} hq={num_heads} q_len=1 page={page_size} "
            f"mask=causal lse=0 q={name} kv={name} out={name} arch={mlagen_arch(device)}")
        self.cache_write_kernel = _get_runtime().kernel(
            f"kv_cache_write qk={LATENT_DIM} v={KV_LORA_RANK} page={page_size} kv={name} "
            f"arch={mlagen_arch(device)}")

    def make_builder(self, max_batch, max_tokens, max_pages, decodes_first=True):
        return MLAMetadataBuilder(self, max_batch, max_tokens, max_pages, decodes_first)

    def write_latent_cache(self, kv_c_normed, k_pe, kv_cache, slot_mapping):
        """concat_and_cache_mla: kv_cache.view(-1, 576)[slot] = [kv_c | k_pe]
        for slot >= 0 (int64 slots, -1 skips a padded token)."""
        self.cache_write_kernel.kv_cache_write(
            kv_c_normed, k_pe.reshape(-1, QK_ROPE_HEAD_DIM), kv_cache, slot_mapping)

    def forward(self, q, kv_c_normed, k_pe, kv_cache, md: MLAAttentionMetadata, output):
        """q [tokens, heads, 192] (rope applied), kv_c_normed [tokens, 512],
        k_pe [tokens, 1, 64] or [tokens, 64], kv_cache [num_blocks, page, 576]
        (or [num_blocks, page, 1, 576]), output [>= tokens, heads * 128]: rows
        [0, num_actual_tokens) are written, the rest left alone."""
        n = md.num_actual_tokens
        if kv_cache.dim() == 4:
            kv_cache = kv_cache.squeeze(2)
        self.write_latent_cache(kv_c_normed[:n], k_pe[:n], kv_cache, md.slot_mapping)
        if md.prefill is not None:
            self._forward_prefill(q, kv_cache, md.prefill, output)
        if md.decode is not None:
            self._forward_decode(q, kv_cache, md.decode, output)
        return output

    def _forward_prefill(self, q, kv_cache, p: MLAPrefillMetadata, output):
        H = self.num_heads
        rows = slice(p.token_start, p.token_start + p.num_tokens)
        latent = kv_cache.view(-1, LATENT_DIM).index_select(0, p.key_slots)   # [keys, 576]
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
        H, B = self.num_heads, d.num_reqs
        rows = slice(d.token_start, d.token_start + B)
        qd = q[rows]
        q_cat = torch.empty(B, 1, H, LATENT_DIM, dtype=q.dtype, device=q.device)
        # Absorb W_UK: [H, B, 128] x [H, 128, 512] -> [H, B, 512], written per head.
        q_cat[:, 0, :, :KV_LORA_RANK] = torch.bmm(
            qd[:, :, :QK_NOPE_HEAD_DIM].transpose(0, 1), self.W_UK).transpose(0, 1)
        q_cat[:, 0, :, KV_LORA_RANK:] = qd[:, :, QK_NOPE_HEAD_DIM:]
        latent_out = torch.empty(B, 1, H, KV_LORA_RANK, dtype=q.dtype, device=q.device)
        self.decode_kernel.decode(q_cat, kv_cache, latent_out, d.block_table, d.seq_lens,
                                  d.plan, self.scale)
        # Un-absorb with W_UV: [H, B, 512] x [H, 512, 128] -> [H, B, 128] -> output rows.
        o = torch.bmm(latent_out[:, 0].transpose(0, 1), self.W_UV)
        output[rows].view(B, H, V_HEAD_DIM).copy_(o.transpose(0, 1))
