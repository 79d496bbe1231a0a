"""Decode steps of the vLLM-shaped MLA backend (vllm_mla_backend.py), timed
end to end as an engine runs them: one CUDA graph per batch size replaying
the layer's whole decode forward (cache write, W_UK absorb, mlagen decode,
W_UV), after a 256 MB write that evicts L2 (other layers run between two
calls of one layer), CUDA events around each replay, median of --reps.
The decode kernel alone is timed the same way.

For each cache dtype (auto, fp8, and fp8q: an fp8 cache with e4m3 decode
queries), query length and batch it runs the compiler's decode
kernel and each pinned tile_q of --tile-q that the signature allows, in
alternating rounds, and says which is fastest: the evidence behind
default_decode_tile_q.

    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so \\
        python3 python/examples/bench_vllm_backend.py [--heads 16] [--q-len 1,2] \\
        [--kv auto,fp8,fp8q] [--batches 16,32,64,128,256] [--seq 4096] [--tile-q 16,32]

Writes vllm_backend_bench.json and .md under $OUT (or /tmp).
"""
import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vllm_mla_backend as be  # noqa: E402
import mlagen  # noqa: E402

DEV = "cuda"
PAGE = 64


def timed(fn, reps, flush):
    """Median us of fn() after a flush, CUDA events around each call."""
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    times.sort()
    return times[len(times) // 2]


class Step:
    """One decode-only step of `batch` requests of `seq` keys (q_len of them
    new), captured twice: the whole forward, and the decode kernel alone."""

    def __init__(self, heads, q_len, kv, batch, seq, tile_q, gen):
        W_UK = torch.randn(heads, be.QK_NOPE_HEAD_DIM, be.KV_LORA_RANK, generator=gen) \
            / math.sqrt(be.KV_LORA_RANK)
        W_UV = torch.randn(heads, be.KV_LORA_RANK, be.V_HEAD_DIM, generator=gen) \
            / math.sqrt(be.KV_LORA_RANK)
        # kv "fp8q": an fp8 cache and an e4m3 decode query.
        self.impl = be.MlagenMLAImpl(
            heads, PAGE, W_UK, W_UV, kv_cache_dtype="auto" if kv == "auto" else "fp8",
            k_scale=1.0 if kv == "auto" else 0.05, fp8_query=kv == "fp8q", q_scale=1 / 32,
            num_spec_tokens=q_len - 1, decode_tile_q=[(batch, tile_q)] if tile_q else [])
        pages = seq // PAGE
        self.cache = self.impl.new_kv_cache(batch * pages + 1, DEV)
        self.cache.copy_(torch.randn(self.cache.shape, device=DEV).to(self.cache.dtype))
        table = torch.randperm(batch * pages, generator=gen).view(batch, pages).int()
        slots = [int(table[b, (seq - q_len + j) // PAGE]) * PAGE + (seq - q_len + j) % PAGE
                 for b in range(batch) for j in range(q_len)]
        builder = self.impl.make_builder(batch, batch * q_len, pages)
        self.md = builder.build(query_start_loc=[i * q_len for i in range(batch + 1)],
                                seq_lens=[seq] * batch, block_table=table, slot_mapping=slots)
        T = batch * q_len
        self.q = torch.randn(T, heads, be.QK_HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        self.kv_c = torch.randn(T, be.KV_LORA_RANK, device=DEV, dtype=torch.bfloat16)
        self.k_pe = torch.randn(T, 1, be.QK_ROPE_HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        self.out = torch.empty(T, heads * be.V_HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        d = self.md.decode
        self.q_cat = torch.randn(batch, q_len, heads, be.LATENT_DIM, device=DEV,
                                 dtype=torch.bfloat16)
        if kv == "fp8q":
            self.q_cat = self.q_cat.to(torch.float8_e4m3fn)
        self.latent_out = torch.empty(batch, q_len, heads, be.KV_LORA_RANK, device=DEV,
                                      dtype=torch.bfloat16)
        self.tile_q = int(d.kernel.fields.get("tile_q", 0))
        forward = lambda: self.impl.forward(self.q, self.kv_c, self.k_pe, self.cache, self.md,
                                            self.out)
        decode = lambda: d.kernel.decode(self.q_cat, self.cache, self.latent_out, d.block_table,
                                         d.seq_lens, d.plan, self.impl.scale,
                                         kv_scale=self.impl.k_scale,
                                         q_scale=self.impl.q_scale if kv == "fp8q" else 1.0)
        self.graphs = {}
        for name, fn in (("forward", forward), ("decode", decode)):
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            self.graphs[name] = g
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--q-len", default="1,2")
    ap.add_argument("--kv", default="auto,fp8,fp8q")
    ap.add_argument("--batches", default="16,32,64,128,256")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--tile-q", default="16,32")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    ints = lambda s: [int(x) for x in s.split(",") if x]
    gen = torch.Generator().manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=DEV)
    rows = []
    for kv in args.kv.split(","):
        for q_len in ints(args.q_len):
            for batch in ints(args.batches):
                steps = []
                # A pin only means something below the request's q rows.
                pins = [t for t in ints(args.tile_q) if t < args.heads * q_len]
                for tile_q in [0] + pins:
                    try:
                        steps.append(Step(args.heads, q_len, kv, batch, args.seq, tile_q, gen))
                    except (mlagen.Error, ValueError) as e:
                        if tile_q == 0:
                            raise
                        # A pin the signature refuses (larger than the
                        # compiler's block, or 64 rows where not allowed).
                        print(f"  skip tile_q={tile_q}: {str(e).splitlines()[0][:120]}")
                times = {s.tile_q: dict(forward=[], decode=[]) for s in steps}
                for _ in range(args.rounds):
                    for s in steps:
                        for name, g in s.graphs.items():
                            times[s.tile_q][name].append(timed(g.replay, args.reps, flush))
                for tq, t in times.items():
                    row = dict(heads=args.heads, q_len=q_len, kv=kv, batch=batch,
                               seq=args.seq, tile_q=tq,
                               forward_us=t["forward"], decode_us=t["decode"])
                    rows.append(row)
                    print(f"H{args.heads} q_len {q_len} kv {kv:<4} B{batch:<4} tile_q "
                          f"{tq or 'default':<7} forward "
                          + " ".join(f"{x:7.1f}" for x in t["forward"]) + " us, decode "
                          + " ".join(f"{x:7.1f}" for x in t["decode"]) + " us", flush=True)
                del steps
                torch.cuda.empty_cache()
    out_dir = os.environ.get("OUT", "/tmp")
    meta = dict(gpu=torch.cuda.get_device_name(), command=" ".join(sys.argv),
                timing="CUDA graph replay after a 256 MB L2-evicting write, median of "
                       f"{args.reps}, {args.rounds} alternating rounds")
    with open(os.path.join(out_dir, "vllm_backend_bench.json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)
    lines = [f"{meta['gpu']}; {meta['timing']}; `{meta['command']}`", "",
             "| kv | q_len | batch | tile_q | forward us | decode us | best forward |",
             "|---|---|---|---|---|---|---|"]
    key = lambda r: (r["kv"], r["q_len"], r["batch"])
    best = {}
    for r in rows:
        if key(r) not in best or min(r["forward_us"]) < min(best[key(r)]["forward_us"]):
            best[key(r)] = r
    for r in rows:
        lines.append(f"| {r['kv']} | {r['q_len']} | {r['batch']} | {r['tile_q'] or 'default'} | "
                     + ", ".join(f"{x:.1f}" for x in r["forward_us"]) + " | "
                     + ", ".join(f"{x:.1f}" for x in r["decode_us"]) + " | "
                     + ("yes" if best[key(r)] is r else "") + " |")
    with open(os.path.join(out_dir, "vllm_backend_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
