"""GQA KV-cache write (reshape_and_cache) on the GPU against torch indexing.

Run on a CUDA machine:
  PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/reshape_and_cache_device_test.py
Writes reshape_and_cache.json under $OUT (or /tmp). Exit status 1 on any failure.

Cases: Llama-3-8B (8 kv heads of 128), 2 heads of 64, 4 of 256, 8 of 80
and 4 of 96; pages of 16 and 64; key and value as slices of one fused qkv
projection [T, (hq + 2 hkv) * d] (vLLM's layout, so the token stride is not
hkv * d); the caches as halves of one [2, blocks, page, hkv, d] tensor
(vLLM's flash-attention layout) or of one [blocks, 2, page, hkv, d] tensor
(interleaved: the block stride is twice a cache's); padded tokens (slot -1);
int32 and int64 slot_mapping (vLLM passes int64). 16-bit caches (bf16,
fp16) must be written bitwise. fp8 e4m3 caches (bf16 and fp16 inputs) must
equal torch's (x.float() / scale).clamp(-448, 448).to(float8_e4m3fn) bit for
bit, keys with k_scale and values with a different v_scale, with values that
saturate and values in fp8's subnormal range mixed in. Every slot not
written keeps its sentinel. An fp8 write without k_scale or v_scale is
refused before launch.
"""
import json
import os
import sys

import torch

import mlagen

DEV = "cuda"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
FP8_MAX = 448.0  # OCP e4m3 (NVIDIA)
SHAPES = ((8, 128), (2, 64), (4, 256), (8, 80), (4, 96))  # (kv heads, head dim)


def bits(t):
    """A copy of the raw bits of a cache or rows as [slots, hkv, d]: viewed as
    integers first (float8 tensors index and copy poorly), then made
    contiguous."""
    raw = t.view(torch.uint8 if t.element_size() == 1 else torch.int16)
    return raw.reshape(-1, t.shape[-2], t.shape[-1]).contiguous().clone()


def expected(sentinel, rows, slots, scale):
    """The cache after the write, as bits: the sentinel bits, with row
    slots[t] = rows[t] (an fp8 cache: torch's saturated quantisation of
    rows / scale)."""
    out = sentinel.clone()
    if scale is not None:
        rows = (rows.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    keep = slots >= 0
    out[slots[keep].long()] = bits(rows)[keep]
    return out


def make_caches(layout, num_blocks, page, heads, dim, fp8, dtype):
    """Sentinel k and v caches as views of one tensor: 'split' [2, blocks, ...]
    or 'interleaved' [blocks, 2, ...]."""
    shape = ((2, num_blocks, page, heads, dim) if layout == "split"
             else (num_blocks, 2, page, heads, dim))
    if fp8:
        whole = torch.randint(0, 256, shape, device=DEV, dtype=torch.uint8).view(
            torch.float8_e4m3fn)
    else:
        whole = torch.randn(shape, device=DEV, dtype=dtype)
    k, v = whole.unbind(0 if layout == "split" else 1)
    return whole, k, v


def run_case(rt, arch, heads, dim, page, dtype, tokens, padded=0, fp8=False, slots64=False,
             layout="split"):
    sig = (f"reshape_and_cache hkv={heads} v={dim} page={page} in={dtype} kv=fp8e4m3 "
           f"arch={arch}" if fp8 else
           f"reshape_and_cache hkv={heads} v={dim} page={page} kv={dtype} arch={arch}")
    kernel = rt.kernel(sig)
    tdt = DTYPES[dtype]
    total = tokens + padded
    num_blocks = 2 * (total // page) + 8
    q_heads = 4 * heads
    # vLLM's fused projection: q, then k, then v per token.
    qkv = torch.randn(total, (q_heads + 2 * heads) * dim, device=DEV, dtype=tdt)
    k_scale = v_scale = None
    if fp8:
        k_scale = torch.tensor([0.05], device=DEV)
        v_scale = torch.tensor([0.0123], device=DEV)
        # Values past 448 * scale saturate; values below 2^-6 * scale land in
        # fp8's subnormals.
        n = qkv.numel()
        pick = torch.randperm(n, device=DEV)
        qkv.view(-1)[pick[:n // 50]] *= 1000.0
        qkv.view(-1)[pick[n // 50:n // 25]] *= 1e-3
    key = qkv[:, q_heads * dim:(q_heads + heads) * dim].view(total, heads, dim)
    value = qkv[:, (q_heads + heads) * dim:].view(total, heads, dim)
    whole, k_cache, v_cache = make_caches(layout, num_blocks, page, heads, dim, fp8, tdt)
    sentinel_k, sentinel_v = bits(k_cache), bits(v_cache)
    slots = torch.randperm(num_blocks * page, device=DEV)[:total].to(torch.int32)
    if padded:
        slots[torch.randperm(total, device=DEV)[:padded]] = -1
    if slots64:
        slots = slots.to(torch.int64)
    kernel.reshape_and_cache(key, value, k_cache, v_cache, slots, k_scale=k_scale,
                             v_scale=v_scale)
    torch.cuda.synchronize()
    mismatched = int((bits(k_cache) != expected(sentinel_k, key, slots, k_scale)).sum())
    mismatched += int((bits(v_cache) != expected(sentinel_v, value, slots, v_scale)).sum())
    return dict(signature=kernel.signature, tokens=tokens, padded=padded, layout=layout,
                slot_dtype="int64" if slots64 else "int32", mismatched=mismatched,
                ok=mismatched == 0)


def refused_without(rt, arch, missing):
    """An fp8 write lacking one scale raises before launch, naming it."""
    k = rt.kernel(f"reshape_and_cache hkv=8 v=128 page=16 kv=fp8e4m3 arch={arch}")
    cache = torch.zeros(4, 16, 8, 128, device=DEV, dtype=torch.uint8)
    x = torch.zeros(2, 8, 128, device=DEV, dtype=torch.bfloat16)
    scale = torch.ones(1, device=DEV)
    scales = dict(k_scale=scale, v_scale=scale)
    scales[missing] = None
    try:
        k.reshape_and_cache(x, x, cache, cache.clone(), torch.zeros(2, dtype=torch.int64,
                                                                     device=DEV), **scales)
        ok = False
    except ValueError as e:
        ok = f"{missing} is required" in str(e)
    torch.cuda.synchronize()
    return dict(signature=f"fp8 cache without {missing}", tokens=2, padded=0, layout="-",
                slot_dtype="int64", mismatched=0, ok=ok and not cache.any().item())


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    results = []
    # 16-bit caches, bitwise.
    for dtype in ("bf16", "fp16"):
        for i, (heads, dim) in enumerate(SHAPES):
            for page in (16, 64):
                results.append(run_case(rt, arch, heads, dim, page, dtype, 1000, padded=24,
                                        slots64=page == 64,
                                        layout="split" if i % 2 == 0 else "interleaved"))
    results.append(run_case(rt, arch, 8, 128, 16, "bf16", 1))
    results.append(run_case(rt, arch, 8, 128, 16, "bf16", 0))
    # fp8 caches, bit-exact against torch's quantisation.
    for i, (heads, dim) in enumerate(SHAPES):
        for page in (16, 64):
            results.append(run_case(rt, arch, heads, dim, page, "bf16", 1000, padded=24,
                                    fp8=True, slots64=page == 16,
                                    layout="interleaved" if i % 2 == 0 else "split"))
    for heads, dim in ((8, 128), (4, 96)):
        for slots64 in (False, True):
            results.append(run_case(rt, arch, heads, dim, 16, "fp16", 1000, padded=24,
                                    fp8=True, slots64=slots64))
    results.append(run_case(rt, arch, 8, 128, 64, "bf16", 3, fp8=True, slots64=True))
    # Bad input: a missing scale is refused before launch.
    results.append(refused_without(rt, arch, "k_scale"))
    results.append(refused_without(rt, arch, "v_scale"))
    for r in results:
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['signature']} tokens={r['tokens']} "
              f"padded={r['padded']} layout={r['layout']} slots={r['slot_dtype']} "
              f"mismatched={r['mismatched']}", flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "reshape_and_cache.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend, results=results),
                  f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
