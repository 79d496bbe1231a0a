"""Speed against sequence length and batch, mlagen next to its peers, as PNG plots.

Run on the GPU machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/plot_sweep.py
Writes sweep.json, prefill_sweep.png and decode_sweep.png under $OUT (or /tmp).
Prefill: causal MLA prefill (192/128, H16) at 16384 tokens per batch (B = 16384/S);
decode: absorbed MLA decode (576/512, H16, page 64, q_len 1) over batch at S 4096
and over S at B64. Medians of triton.testing.do_bench.
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
    arch = "sm_90a" if torch.cuda.get_device_capability() >= (9, 0) else "sm_80"
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

    def decode_gbps(batch, seq):
        bytes_ = batch * seq * 576 * 2 + batch * 16 * (576 + 512) * 2
        return round(bytes_ / bench_decode.bench(bench_decode.mlagen_decode(rt, arch, batch, 16, seq)) / 1e6, 1)
    for b in (1, 8, 16, 32, 64, 128, 256):
        res["decode_batch"].append({"B": b, "mlagen_GBps": decode_gbps(b, 4096)})
    for s in (1024, 2048, 4096, 8192, 16384, 32768):
        res["decode_seq"].append({"S": s, "mlagen_GBps": decode_gbps(64, s)})
    print(res["decode_batch"], res["decode_seq"], flush=True)

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in ("mlagen", "cudnn", "flash2_padV"):
        ax.plot([r["S"] for r in res["prefill"]], [r[name] for r in res["prefill"]], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length (batch = 16384 / S)", ylabel="TFLOP/s",
           title=f"MLA prefill 192/128 causal bf16 H16, {res['gpu']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "prefill_sweep.png"), dpi=120)

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot([r["B"] for r in res["decode_batch"]], [r["mlagen_GBps"] for r in res["decode_batch"]], marker="o")
    a.set_xscale("log", base=2)
    a.set(xlabel="batch (S 4096)", ylabel="GB/s", title="absorbed MLA decode H16 page 64")
    b.plot([r["S"] for r in res["decode_seq"]], [r["mlagen_GBps"] for r in res["decode_seq"]], marker="o")
    b.set_xscale("log", base=2)
    b.set(xlabel="sequence length (B 64)", ylabel="GB/s", title=res["gpu"])
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "decode_sweep.png"), dpi=120)
    json.dump(res, open(os.path.join(out_dir, "sweep.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
