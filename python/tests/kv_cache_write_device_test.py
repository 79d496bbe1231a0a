"""MLA KV-cache write on the GPU against torch indexing.

Run on a CUDA machine:
  PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 python/tests/kv_cache_write_device_test.py
Writes kv_cache_write.json under $OUT (or /tmp). Exit status 1 on any failure.

Cases: DeepSeek-V3 rows (512 latent + 64 rope), pages of 64, 16 and 1 keys,
bf16 and fp16, kv_c and k_pe as slices of one [T, 576] projection output
(vLLM's layout), a 4-d [blocks, page, 1, 576] cache, padded tokens
(slot -1), and slots made by expand_page_indices for the new tokens of
requests (their positions seq_len - new .. seq_len - 1). The write must be
bitwise: every written row equals its source, every other row keeps its
sentinel.
"""
import json
import os
import sys

import torch

import mlagen

DEV = "cuda"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def check(cache, kv_c, k_pe, slots, sentinel):
    flat = cache.reshape(-1, cache.shape[-1])
    expected = sentinel.reshape(-1, cache.shape[-1]).clone()
    keep = slots >= 0
    rows = torch.cat([kv_c, k_pe], dim=1)
    expected[slots[keep].long()] = rows[keep]
    return bool(torch.equal(flat.view(torch.int16), expected.view(torch.int16)))


def run_case(rt, arch, page, dtype, tokens, four_d=False, padded=0, from_expand=False):
    sig = f"kv_cache_write qk=576 v=512 page={page} kv={dtype} arch={arch}"
    kernel = rt.kernel(sig)
    tdt = DTYPES[dtype]
    num_blocks = 2 * ((tokens + padded) // page) + 16  # room for expand's tables
    shape = (num_blocks, page, 1, 576) if four_d else (num_blocks, page, 576)
    sentinel = torch.randn(shape, device=DEV, dtype=tdt)
    cache = sentinel.clone()
    proj = torch.randn(tokens + padded, 576 + 64, device=DEV, dtype=tdt)  # a wider row
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
    kernel.kv_cache_write(kv_c, k_pe, cache, slots)
    torch.cuda.synchronize()
    ok = check(cache, kv_c, k_pe, slots, sentinel)
    return dict(signature=sig, tokens=tokens, padded=padded, four_d=four_d,
                from_expand=from_expand, ok=ok)


def main():
    torch.manual_seed(0)
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    print("backend:", rt.backend, flush=True)
    arch = "sm_90a" if torch.cuda.get_device_capability() >= (9, 0) else "sm_80"
    results = []
    for dtype in ("bf16", "fp16"):
        for page in (64, 16, 1):
            results.append(run_case(rt, arch, page, dtype, 1000, padded=24))
    results.append(run_case(rt, arch, 64, "bf16", 3, four_d=True))
    results.append(run_case(rt, arch, 64, "bf16", 0))
    results.append(run_case(rt, arch, 64, "bf16", 300, from_expand=True))
    results.append(run_case(rt, arch, 16, "bf16", 300, padded=8, from_expand=True))
    for r in results:
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['signature']} tokens={r['tokens']} "
              f"padded={r['padded']} four_d={r['four_d']} from_expand={r['from_expand']}",
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
