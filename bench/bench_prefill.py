"""MLA prefill (qk 192 / v 128, bf16) : mlagen next to PyTorch's attention backends.

Run on the GPU machine from the repo root:
    PYTHONPATH=python python3 bench/bench_prefill.py [--quick]
Writes prefill_bench.json and prefill_bench.md under $OUT (or /tmp). TFLOP/s
count useful work only: 2*H*sum(sq*sk)*(192+128), halved for causal (square
sequences). Times are medians of triton.testing.do_bench.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import mlagen

DQK, DV = 192, 128


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def flops(lens, heads, causal):
    f = sum(2.0 * heads * s * s * (DQK + DV) for s in lens)
    return f / 2 if causal else f


def mlagen_fn(rt, arch, lens, heads, causal):
    kernel = rt.kernel(f"prefill qk={DQK} v={DV} hq={heads} hkv={heads} "
                       f"mask={'causal' if causal else 'none'} lse=1 q=bf16 kv=bf16 out=bf16 arch={arch}")
    total = sum(lens)
    q = torch.randn(total, heads, DQK, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(total, heads, DQK, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(total, heads, DV, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(total, heads * DV, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(heads, total, device="cuda", dtype=torch.float32)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device="cuda", dtype=torch.int32)
    scale = 1.0 / math.sqrt(DQK)
    return lambda: kernel.prefill(q, k, v, out, cu, cu, max(lens), lse=lse, softmax_scale=scale)


def sdpa_fns(lens, heads, causal):
    """One padded batch when all lengths are equal, else a loop over sequences."""
    fns = {}
    groups = [(len(lens), lens[0])] if len(set(lens)) == 1 else [(1, s) for s in lens]
    tensors = []
    for b, s in groups:
        q = torch.randn(b, heads, s, DQK, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, heads, s, DQK, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, heads, s, DV, device="cuda", dtype=torch.bfloat16)
        tensors.append((q, k, v, F.pad(v, (0, DQK - DV))))
    for name, backend, padded in (("cudnn", SDPBackend.CUDNN_ATTENTION, False),
                                  ("flash2_padV", SDPBackend.FLASH_ATTENTION, True),
                                  ("efficient", SDPBackend.EFFICIENT_ATTENTION, False)):
        def fn(backend=backend, padded=padded):
            with sdpa_kernel([backend]):
                for q, k, v, vp in tensors:
                    F.scaled_dot_product_attention(q, k, vp if padded else v, is_causal=causal)
        fns[name] = fn
    if len(groups) == 1:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        b, s = groups[0]
        q, k, v, _ = tensors[0]
        flex = torch.compile(flex_attention, dynamic=False)
        mask = create_block_mask(lambda b_, h, qi, ki: qi >= ki, b, heads, s, s, device="cuda") if causal else None
        fns["flex"] = lambda: flex(q, k, v, block_mask=mask)
    return fns


def main():
    quick = "--quick" in sys.argv
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    arch = "sm_90a" if torch.cuda.get_device_capability() >= (9, 0) else "sm_80"
    shapes = [("B4 H16 S4096", [4096] * 4, 16),
              ("B1 H128 S8192", [8192], 128),
              ("ragged H16", [8192, 4096, 3000, 2048, 1024, 512, 300, 17], 16)]
    if quick:
        shapes = shapes[:1]
    rows = []
    for label, lens, heads in shapes:
        causal = True
        fl = flops(lens, heads, causal)
        row = {"shape": label, "lens": lens, "heads": heads, "causal": causal}
        candidates = {"mlagen": mlagen_fn(rt, arch, lens, heads, causal)}
        candidates.update(sdpa_fns(lens, heads, causal))
        for name, fn in candidates.items():
            try:
                ms = bench(fn)
                row[name] = round(fl / ms / 1e9, 1)
            except Exception as e:  # a peer that cannot run this shape says so
                row[name] = f"unsupported: {str(e).splitlines()[0][:100]}"
            print(label, name, row[name], flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    names = ["mlagen", "cudnn", "flex", "flash2_padV", "efficient"]
    md = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; TFLOP/s, causal, qk 192 / v 128, bf16",
          "", "| shape | " + " | ".join(names) + " | mlagen / cudnn |", "|---" * (len(names) + 2) + "|"]
    for r in rows:
        cells = [str(r.get(n, "-")) for n in names]
        ratio = (f"{r['mlagen'] / r['cudnn']:.2f}" if isinstance(r.get("mlagen"), float)
                 and isinstance(r.get("cudnn"), float) else "-")
        md.append(f"| {r['shape']} | " + " | ".join(cells) + f" | {ratio} |")
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "prefill_bench.json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), rows=rows), f, indent=1)
    with open(os.path.join(out_dir, "prefill_bench.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
