"""Prefill, bf16, causal: mlagen next to PyTorch's attention backends. MLA
(qk 192 / v 128) shapes first, then GQA models (Llama-3-8B 32/8 d128, 32/8
d64, Gemma-2-9B's 16/8 d256 without its soft cap, which SDPA lacks).

Run on the GPU machine from the repo root:
    PYTHONPATH=python python3 bench/bench_prefill.py [--quick]
Writes prefill_bench.json and prefill_bench.md under $OUT (or /tmp). TFLOP/s
count useful work only: 2*H*sum(sq*sk)*(qk+v), halved for causal (square
sequences). Times are medians of triton.testing.do_bench; mlagen and cuDNN
alternate for three rounds per shape and report the median round. GQA peers get K
and V expanded to the q heads beforehand (outside the timing; same FLOPs).
"""
import json
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import mlagen

ROUNDS = 3  # alternating rounds of mlagen and cuDNN per shape


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def flops(lens, heads, causal, dqk, dv):
    f = sum(2.0 * heads * s * s * (dqk + dv) for s in lens)
    return f / 2 if causal else f


def write_results(stem, rows, md):
    """STEM.json (the rows, with the GPU) and STEM.md (the table `md`, a list
    of lines) under $OUT (or /tmp); prints the table."""
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(dict(gpu=torch.cuda.get_device_name(), rows=rows), f, indent=1)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


def mlagen_fn(rt, arch, lens, heads, causal, dqk, dv, hkv, tile_q=0, extra="", dtype="bf16"):
    """tile_q: 0 lets the compiler choose, else pinned (for A/B probes);
    extra: more signature fields (e.g. "window=4095,0 softcap=50");
    dtype: "bf16" or "fp16" for q, k, v and out."""
    kernel = rt.kernel(f"prefill qk={dqk} v={dv} hq={heads} hkv={hkv} "
                       f"mask={'causal' if causal else 'none'} lse=1 q={dtype} kv={dtype} out={dtype} arch={arch}"
                       + (f" tile_q={tile_q}" if tile_q else "") + (f" {extra}" if extra else ""))
    elem = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    total = sum(lens)
    q = torch.randn(total, heads, dqk, device="cuda", dtype=elem)
    k = torch.randn(total, hkv, dqk, device="cuda", dtype=elem)
    v = torch.randn(total, hkv, dv, device="cuda", dtype=elem)
    out = torch.empty(total, heads * dv, device="cuda", dtype=elem)
    lse = torch.empty(heads, total, device="cuda", dtype=torch.float32)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device="cuda", dtype=torch.int32)
    scale = 1.0 / math.sqrt(dqk)
    return lambda: kernel.prefill(q, k, v, out, cu, cu, max(lens), lse=lse, softmax_scale=scale)


def sdpa_fns(lens, heads, causal, dqk, dv):
    """One padded batch when all lengths are equal, else a loop over sequences."""
    fns = {}
    groups = [(len(lens), lens[0])] if len(set(lens)) == 1 else [(1, s) for s in lens]
    tensors = []
    for b, s in groups:
        q = torch.randn(b, heads, s, dqk, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, heads, s, dqk, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, heads, s, dv, device="cuda", dtype=torch.bfloat16)
        tensors.append((q, k, v, F.pad(v, (0, dqk - dv))))
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
    arch = mlagen.default_arch()
    # (label, lens, hq, hkv, qk, v)
    shapes = [("B4 H16 S4096", [4096] * 4, 16, 16, 192, 128),
              ("B1 H128 S8192", [8192], 128, 128, 192, 128),
              ("ragged H16", [8192, 4096, 3000, 2048, 1024, 512, 300, 17], 16, 16, 192, 128),
              ("GQA Llama-3-8B 32/8 d128 B4 S4096", [4096] * 4, 32, 8, 128, 128),
              ("GQA 32/8 d64 B4 S4096", [4096] * 4, 32, 8, 64, 64),
              ("MHA Phi-2-style 32/32 d80 B4 S4096", [4096] * 4, 32, 32, 80, 80),
              ("MHA Phi-3-style 32/32 d96 B4 S4096", [4096] * 4, 32, 32, 96, 96),
              ("GQA Gemma-2 16/8 d256 B4 S4096", [4096] * 4, 16, 8, 256, 256)]
    if quick:
        shapes = shapes[:1]
    rows = []
    for label, lens, heads, hkv, dqk, dv in shapes:
        causal = True
        fl = flops(lens, heads, causal, dqk, dv)
        row = {"shape": label, "lens": lens, "heads": heads, "kv_heads": hkv, "qk": dqk, "v": dv,
               "causal": causal}
        candidates = {"mlagen": mlagen_fn(rt, arch, lens, heads, causal, dqk, dv, hkv)}
        candidates.update(sdpa_fns(lens, heads, causal, dqk, dv))
        # mlagen and cuDNN alternate for ROUNDS rounds and keep their
        # medians: sustained load moves both by a few percent (power limit).
        order = ["mlagen", "cudnn"] * ROUNDS + [n for n in candidates if n not in ("mlagen", "cudnn")]
        times = {}
        for name in order:
            if isinstance(times.get(name), str):
                continue  # unsupported in an earlier round
            try:
                times.setdefault(name, []).append(bench(candidates[name]))
            except Exception as e:  # a peer that cannot run this shape says so
                times[name] = f"unsupported: {str(e).splitlines()[0][:100]}"
        for name, ms in times.items():
            row[name] = round(fl / statistics.median(ms) / 1e9, 1) if isinstance(ms, list) else ms
            if isinstance(ms, list) and len(ms) > 1:
                row[name + "_rounds"] = [round(fl / t / 1e9, 1) for t in ms]
            print(label, name, row[name], flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    names = ["mlagen", "cudnn", "flex", "flash2_padV", "efficient"]
    md = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, mlagen {arch} kernels; "
          "TFLOP/s, causal, bf16 "
          "(MLA rows qk 192 / v 128; flash2_padV pads V to qk where they differ)",
          "", "| shape | " + " | ".join(names) + " | mlagen / cudnn |", "|---" * (len(names) + 2) + "|"]
    for r in rows:
        cells = [str(r.get(n, "-")) for n in names]
        ratio = (f"{r['mlagen'] / r['cudnn']:.2f}" if isinstance(r.get("mlagen"), float)
                 and isinstance(r.get("cudnn"), float) else "-")
        md.append(f"| {r['shape']} | " + " | ".join(cells) + f" | {ratio} |")
    write_results("prefill_bench", rows, md)


if __name__ == "__main__":
    main()
