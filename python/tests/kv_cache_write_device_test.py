"""MLA KV-cache write on the GPU against torch indexing.

Run on a CUDA machine:
  PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/kv_cache_write_device_test.py
Writes kv_cache_write.json under $OUT (or /tmp). Exit status 1 on any failure.

Cases: DeepSeek-V3 rows (512 latent + 64 rope), pages of 64, 16 and 1 keys,
bf16 and fp16, kv_c and k_pe as slices of one [T, 576] projection output
(vLLM's layout), a 4-d [blocks, page, 1, 576] cache, padded tokens
(slot -1), and slots made by expand_page_indices for the new tokens of
requests (their positions seq_len - new .. seq_len - 1), int64 slot_mapping
(what vLLM passes). fp8 e4m3 caches (bf16 and fp16 inputs, pages 64 and 1,
int32 and int64 slots): each element must equal torch's
(x.float() / scale).clamp(-448, 448).to(float8_e4m3fn), bit for bit, with
values that saturate and values in fp8's subnormal range mixed in. The write
must be bitwise: every written row equals its source (or its quantisation),
every other row keeps its sentinel.
"""
import json
import os
import sys

import torch

import mlagen

DEV = "cuda"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


FP8_MAX = 448.0  # OCP e4m3 (NVIDIA)


def check(cache, kv_c, k_pe, slots, sentinel, scale=None):
    """Bitwise: written rows equal their source (an fp8 cache: torch's
    saturated quantisation of x / scale), the rest their sentinel. Returns
    (ok, mismatched elements)."""
    # Compared as raw bits (uint8 / int16 views): float8 tensors index poorly.
    bits = torch.uint8 if scale is not None else torch.int16
    flat = cache.reshape(-1, cache.shape[-1]).view(bits)
    expected = sentinel.reshape(-1, cache.shape[-1]).view(bits).clone()
    keep = slots >= 0
    rows = torch.cat([kv_c, k_pe], dim=1)
    if scale is not None:
        rows = (rows.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    expected[slots[keep].long()] = rows.view(bits)[keep]
    mismatched = int((flat != expected).sum())
    return mismatched == 0, mismatched


def run_case(rt, arch, page, dtype, tokens, four_d=False, padded=0, from_expand=False,
             fp8=False, slots64=False):
    sig = (f"kv_cache_write qk=576 v=512 page={page} in={dtype} kv=fp8e4m3 arch={arch}" if fp8
           else f"kv_cache_write qk=576 v=512 page={page} kv={dtype} arch={arch}")
    kernel = rt.kernel(sig)
    tdt = DTYPES[dtype]
    num_blocks = 2 * ((tokens + padded) // page) + 16  # room for expand's tables
    shape = (num_blocks, page, 1, 576) if four_d else (num_blocks, page, 576)
    if fp8:
        sentinel = torch.randint(0, 256, shape, device=DEV, dtype=torch.uint8).view(
            torch.float8_e4m3fn)
    else:
        sentinel = torch.randn(shape, device=DEV, dtype=tdt)
    cache = sentinel.clone()
    proj = torch.randn(tokens + padded, 576 + 64, device=DEV, dtype=tdt)  # a wider row
    scale = None
    if fp8:
        scale = torch.tensor([0.05], device=DEV)
        # Values past 448 * scale saturate; values below 2^-6 * scale land in
        # fp8's subnormals.
        n = proj.numel()
        pick = torch.randperm(n, device=DEV)
        proj.view(-1)[pick[:n // 50]] *= 1000.0
        proj.view(-1)[pick[n // 50:n // 25]] *= 1e-3
    kv_c, k_pe = proj[:, :512], proj[:, 512:576]
    if from_expand:
        # Requests whose last `new` tokens are written, slots through a
        # shuffled block table and expand_page_indices.
        expand = rt.kernel(f"expand_page_indices page={page} arch={arch}")
        new = [tokens // 3, tokens - 2 * (tokens // 3), tokens // 3]
        ctx = [5, 0, 3 * page + 1]
        pages = max((c + n + page - 1) // page for c, n in zip(ctx, new))
        perm = torch.randperm(num_blocks, device=DEV).to(torch.int32)
        block_table = perm[:len(new) * pages].view(len(new), pages).contiguous()
        if len(new) * pages > num_blocks:
            raise RuntimeError("test sizing: not enough blocks")
        cu = [0]
        for n in new:
            cu.append(cu[-1] + n)
        slots = torch.full((tokens + padded,), -1, dtype=torch.int32, device=DEV)
        expand.expand_page_indices(block_table, torch.tensor(cu, dtype=torch.int32, device=DEV),
                                   slots, max(new),
                                   seq_starts=torch.tensor(ctx, dtype=torch.int32, device=DEV))
    else:
        slots = torch.randperm(num_blocks * page, device=DEV)[:tokens + padded].to(torch.int32)
        if padded:
            slots[torch.randperm(tokens + padded, device=DEV)[:padded]] = -1
    if slots64:
        slots = slots.to(torch.int64)
    kernel.kv_cache_write(kv_c, k_pe, cache, slots, scale=scale)
    torch.cuda.synchronize()
    ok, mismatched = check(cache, kv_c, k_pe, slots, sentinel, scale)
    return dict(signature=sig, tokens=tokens, padded=padded, four_d=four_d,
                from_expand=from_expand, slot_dtype="int64" if slots64 else "int32",
                mismatched=mismatched, ok=ok)


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = mlagen.default_arch()
    results = []
    for dtype in ("bf16", "fp16"):
        for page in (64, 16, 1):
            results.append(run_case(rt, arch, page, dtype, 1000, padded=24))
    results.append(run_case(rt, arch, 64, "bf16", 3, four_d=True))
    results.append(run_case(rt, arch, 64, "bf16", 0))
    results.append(run_case(rt, arch, 64, "bf16", 300, from_expand=True))
    results.append(run_case(rt, arch, 16, "bf16", 300, padded=8, from_expand=True))
    results.append(run_case(rt, arch, 64, "bf16", 1000, padded=24, slots64=True))
    for dtype in ("bf16", "fp16"):
        for page in (64, 1):
            for slots64 in (False, True):
                results.append(run_case(rt, arch, page, dtype, 1000, padded=24, fp8=True,
                                        slots64=slots64))
    results.append(run_case(rt, arch, 64, "bf16", 3, four_d=True, fp8=True))
    results.append(run_case(rt, arch, 16, "bf16", 300, padded=8, from_expand=True, fp8=True,
                            slots64=True))
    # Bad input: an fp8 cache without its scale is refused before launch.
    try:
        k = rt.kernel(f"kv_cache_write qk=576 v=512 page=64 kv=fp8e4m3 arch={arch}")
        cache = torch.zeros(4, 64, 576, device=DEV, dtype=torch.uint8)
        x = torch.zeros(2, 576, device=DEV, dtype=torch.bfloat16)
        k.kv_cache_write(x[:, :512], x[:, 512:], cache,
                         torch.zeros(2, dtype=torch.int64, device=DEV))
        refused = False
    except ValueError as e:
        refused = "scale is required" in str(e)
    results.append(dict(signature="fp8 cache without scale", tokens=2, padded=0, four_d=False,
                        from_expand=False, slot_dtype="int64", mismatched=0, ok=refused))
    for r in results:
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['signature']} tokens={r['tokens']} "
              f"padded={r['padded']} four_d={r['four_d']} from_expand={r['from_expand']} "
              f"slots={r['slot_dtype']} mismatched={r['mismatched']}",
              flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "kv_cache_write.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), backend=rt.backend, results=results),
                  f, indent=1)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
