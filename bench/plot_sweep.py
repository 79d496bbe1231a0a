"""Speed against sequence length and batch, mlagen next to its peers, as PNG plots.

Run on the GPU machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/plot_sweep.py
Writes sweep.json, prefill_sweep.png and decode_sweep.png under $OUT (or /tmp).
Prefill: causal MLA prefill (192/128, H16) at 16384 tokens per batch (B = 16384/S);
decode: absorbed MLA decode (576/512, H16, page 64, q_len 1) over batch at S 4096
and over S at B64, bf16 and fp8 q + cache (GB/s of the cache bytes each reads), beside
cuDNN's GQA decode at the same batch moving as many cache bytes; and the 128-head
step's TFLOP/s over batch beside torch's bf16 GEMM. Medians of
triton.testing.do_bench (bench_decode.bench: after its writing L2 flush).
"""
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

import bench_decode
import bench_prefill
import mlagen


def main():
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    arch = mlagen.default_arch()
    out_dir = os.environ.get("OUT", "/tmp")
    res = {"gpu": torch.cuda.get_device_name(), "prefill": [], "decode_batch": [], "decode_seq": []}
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        lens = [s] * (16384 // s)
        fl = bench_prefill.flops(lens, 16, True, 192, 128)
        row = {"S": s, "B": len(lens)}
        fns = {"mlagen": bench_prefill.mlagen_fn(rt, arch, lens, 16, True, 192, 128, 16)}
        peers = bench_prefill.sdpa_fns(lens, 16, True, 192, 128)
        fns.update({k: peers[k] for k in ("cudnn", "flash2_padV")})
        for name, fn in fns.items():
            row[name] = round(fl / bench_prefill.bench(fn) / 1e9, 1)
        res["prefill"].append(row)
        print(row, flush=True)
        torch.cuda.empty_cache()

    QK, V = bench_decode.QK, bench_decode.V

    def decode_row(batch, seq):
        us = {name: bench_decode.bench(bench_decode.mlagen_decode(rt, arch, batch, 16, seq, f8, f8))
              for name, f8 in (("bf16", False), ("fp8", True))}
        # GB/s of the cache alone, as cuDNN's count their K and V
        return {"mlagen_GBps": round(batch * seq * QK * 2 / us["bf16"] / 1e6, 1),
                "mlagen_fp8_GBps": round(batch * seq * QK / us["fp8"] / 1e6, 1),
                "fp8_speedup": round(us["bf16"] / us["fp8"], 2),
                # as many cache bytes: 8 kv heads x 128 x K and V = 4096 bytes a token
                "cudnn_same_bytes_GBps": bench_decode.cudnn_gqa_decode_GBps(batch, seq * QK * 2 // 4096)}
    for b in (1, 8, 16, 32, 64, 128, 256):
        res["decode_batch"].append({"B": b, **decode_row(b, 4096)})
        torch.cuda.empty_cache()
    for s in (1024, 2048, 4096, 8192, 16384, 32768):
        res["decode_seq"].append({"S": s, **decode_row(64, s)})
        torch.cuda.empty_cache()
    print(res["decode_batch"], res["decode_seq"], flush=True)
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    res["torch_gemm_TFLOPs"] = round(2 * 8192 ** 3 / bench_decode.bench(lambda: m @ m) / 1e9, 1)
    del m
    res["decode_h128"] = []
    for b in (8, 16, 32, 64, 128):
        ms = bench_decode.bench(bench_decode.mlagen_decode(rt, arch, b, 128, 4096))
        res["decode_h128"].append({"B": b, "mlagen_TFLOPs": round(2.0 * b * 128 * 4096 * (QK + V) / ms / 1e9, 1)})
    print(res["decode_h128"], res["torch_gemm_TFLOPs"], flush=True)

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in ("mlagen", "cudnn", "flash2_padV"):
        ax.plot([r["S"] for r in res["prefill"]], [r[name] for r in res["prefill"]], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length (batch = 16384 / S)", ylabel="TFLOP/s",
           title=f"MLA prefill 192/128 causal bf16 H16, {res['gpu']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "prefill_sweep.png"), dpi=120)

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4))
    for ax, key, x, label in ((a, "decode_batch", "B", "batch (S 4096)"), (b, "decode_seq", "S", "sequence length (B 64)")):
        rows = res[key]
        for name, legend in (("mlagen_GBps", "mlagen bf16"), ("mlagen_fp8_GBps", "mlagen fp8 q + cache"),
                             ("cudnn_same_bytes_GBps", "cuDNN GQA decode, same bytes")):
            ax.plot([r[x] for r in rows], [r[name] for r in rows], marker="o", label=legend)
        ax.set_xscale("log", base=2)
        ax.set(xlabel=label, ylabel="GB/s of cache read")
        ax.legend()
    a.set_title("absorbed MLA decode H16 page 64")
    b.set_title(res["gpu"])
    c.plot([r["B"] for r in res["decode_h128"]], [r["mlagen_TFLOPs"] for r in res["decode_h128"]], marker="o",
           label="mlagen bf16, H128 S4096")
    c.axhline(res["torch_gemm_TFLOPs"], color="gray", linestyle="--", label="torch bf16 GEMM 8192^3")
    c.set_xscale("log", base=2)
    c.set(xlabel="batch", ylabel="TFLOP/s", title="absorbed MLA decode H128 (compute-bound)")
    c.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "decode_sweep.png"), dpi=120)
    json.dump(res, open(os.path.join(out_dir, "sweep.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
