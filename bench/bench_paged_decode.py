"""Paged GQA decode (Llama-3-8B: 32 q / 8 kv heads, d128, q_len 1, S4096):
mlagen next to cuDNN's GQA decode (torch SDPA, contiguous K/V) and flash
(torch SDPA's flash backend) on the same shapes, in one process.

Run on the GPU machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/bench_paged_decode.py
Writes paged_decode_bench.json and paged_decode_bench.md under $OUT (or /tmp);
`python3 bench/bench_paged_decode.py --render JSON` prints a saved run's tables
(no GPU needed).
GB/s count K + V bytes read (their dtype's) plus q and out; ratios are to
cuDNN's bf16 GQA decode GB/s at the same batch, measured in the same run.
Times are medians of triton.testing.do_bench over a plan updated once.

MLAGEN_BENCH_TILE_K="0,32,128" runs one table per tile_k (0: the shape's
choice); a value a shape refuses (bf16 d128 at 128 needs 72 KB of shared
memory) is reported and skipped. Default "0".
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

HQ, HKV, D, SEQ = 32, 8, 128, 4096
TILE_KS = [int(t) for t in os.environ.get("MLAGEN_BENCH_TILE_K", "0").split(",")]


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def io_bytes(batch, kv_bytes):
    return 2 * batch * SEQ * HKV * D * kv_bytes + 2 * batch * HQ * D * 2


def mlagen_paged(rt, arch, batch, page, fp8, tile_k=0):
    # tile_k 0: the shape's choice; else pinned (a tuning override).
    pin = f" tile_k={tile_k}" if tile_k else ""
    kernel = rt.kernel(f"paged_decode hq={HQ} hkv={HKV} v={D} q_len=1 page={page} window=-1 "
                       f"softcap=0 lse=1 q=bf16 kv={'fp8e4m3' if fp8 else 'bf16'} out=bf16"
                       f"{pin} arch={arch}")
    pages = SEQ // page
    q = torch.randn(batch, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(2, batch * pages, page, HKV, D, device="cuda", dtype=torch.bfloat16)
    scales = (None, None)
    if fp8:
        kv = (kv * 16).to(torch.float8_e4m3fn)
        scales = (torch.tensor([1 / 16], device="cuda"), torch.tensor([1 / 16], device="cuda"))
    table = torch.randperm(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), SEQ, device="cuda", dtype=torch.int32)
    out = torch.empty(batch, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(batch, 1, HQ, device="cuda", dtype=torch.float32)
    plan = mlagen.DecodePlan(kernel, batch).update([SEQ] * batch)
    torch.cuda.synchronize()
    return lambda: kernel.paged_decode(q, kv[0], kv[1], out, table, lens, plan,
                                       1 / math.sqrt(D), lse=lse, k_scale=scales[0],
                                       v_scale=scales[1])


def sdpa_decode(batch, backend):
    q = torch.randn(batch, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, HKV, SEQ, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    try:
        with sdpa_kernel([backend]):
            return bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    except RuntimeError as e:  # a backend that refuses the shape
        print(f"{backend}: {e}".splitlines()[0])
        return None


def main():
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    arch = mlagen.default_arch()
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for batch in (64, 128):
        peers = {}
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("flash", SDPBackend.FLASH_ATTENTION)):
            ms = sdpa_decode(batch, backend)
            peers[name] = round(io_bytes(batch, 2) / ms / 1e6, 1) if ms else None
        res[f"cudnn_gqa_decode_B{batch}_GBps"] = peers["cudnn"]
        res[f"flash_gqa_decode_B{batch}_GBps"] = peers["flash"]
        for page in (16, 64):
            for fp8 in (False, True):
                for tile_k in TILE_KS:
                    try:
                        fn = mlagen_paged(rt, arch, batch, page, fp8, tile_k)
                    except Exception as e:  # a pinned tile this shape refuses
                        print(f"tile_k={tile_k} page={page} fp8={fp8}: {str(e).splitlines()[0]}")
                        continue
                    ms = bench(fn)
                    gbps = round(io_bytes(batch, 1 if fp8 else 2) / ms / 1e6, 1)
                    row = dict(tile_k=tile_k, batch=batch, page=page, cache="fp8" if fp8 else "bf16",
                               us=round(ms * 1e3, 1), GBps=gbps,
                               vs_cudnn=round(gbps / peers["cudnn"], 2) if peers["cudnn"] else None,
                               vs_flash=round(gbps / peers["flash"], 2) if peers["flash"] else None)
                    res["rows"].append(row)
                    print(row, flush=True)
    out_dir = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out_dir, "paged_decode_bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    text = render(res)
    with open(os.path.join(out_dir, "paged_decode_bench.md"), "w") as f:
        f.write(text)
    print(text, end="")


def render(res):
    """The Markdown tables of a run's JSON. An fp8 row's last column is its
    tokens/s over the bf16 row of the same batch, page and tile_k."""
    us = {(r["tile_k"], r["batch"], r["page"], r["cache"]): r["us"] for r in res["rows"]}
    def vs_bf16(r):
        bf16 = us.get((r["tile_k"], r["batch"], r["page"], "bf16"))
        return f"{bf16 / r['us']:.2f}x" if r["cache"] == "fp8" and bf16 else ""
    tile_ks = sorted({r["tile_k"] for r in res["rows"]})
    lines = [f"# Paged GQA decode on {res['gpu']} (32/8 heads, d128, S{SEQ}, q_len 1)"]
    for tile_k in tile_ks:
        lines += ["", f"## tile_k={tile_k}{' (shape default)' if tile_k == 0 else ''}", "",
                  "| batch | page | cache | us | GB/s | / cuDNN | / flash | tokens/s / bf16 |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['batch']} | {r['page']} | {r['cache']} | {r['us']} | {r['GBps']} | "
                  f"{r['vs_cudnn']} | {r['vs_flash']} | {vs_bf16(r)} |" for r in res["rows"]
                  if r["tile_k"] == tile_k]
    lines += ["", f"cuDNN GQA decode: B64 {res['cudnn_gqa_decode_B64_GBps']} GB/s, "
              f"B128 {res['cudnn_gqa_decode_B128_GBps']} GB/s (bf16, contiguous K/V)"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--render":  # tables of a saved run
        with open(sys.argv[2]) as f:
            print(render(json.load(f)), end="")
    else:
        main()
