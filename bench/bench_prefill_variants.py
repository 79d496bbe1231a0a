"""Prefill with a sliding window and / or a logit soft cap (Gemma-2's local
and global layers, Mistral's window), bf16, causal: mlagen next to
FlexAttention, the one peer in PyTorch that takes both (a score_mod for the
cap, a block mask for the window; cuDNN's and FA2's SDPA take neither).

Run on the GPU machine from the repo root:
    PYTHONPATH=python python3 bench/bench_prefill_variants.py
Writes prefill_variants.json and prefill_variants.md under $OUT (or /tmp).
TFLOP/s count the (query, key) pairs each mask lets through:
2 * H * pairs * (qk + v). K and V are expanded to the q heads for
FlexAttention outside the timing. mlagen and FlexAttention alternate for
three rounds per shape; medians.
"""
import os
import statistics
import sys

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, os.path.dirname(__file__))
from bench_prefill import ROUNDS, bench, mlagen_fn, write_results  # noqa: E402

import mlagen  # noqa: E402


def visible_pairs(s, window):
    """Causal (query, key) pairs of a square sequence, keys at most `window`
    before their query (-1: unbounded)."""
    if window < 0:
        return s * (s + 1) / 2
    w = min(window, s - 1)
    return (w + 1) * (w + 2) / 2 + (s - w - 1) * (w + 1)


def flex_fn(b, s, heads, hkv, dqk, dv, window, softcap):
    q = torch.randn(b, heads, s, dqk, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hkv, s, dqk, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, hkv, s, dv, device="cuda", dtype=torch.bfloat16)
    k, v = (t.repeat_interleave(heads // hkv, dim=1) for t in (k, v))

    def mask_mod(b_, h, qi, ki):
        keep = qi >= ki
        return keep & (qi - ki <= window) if window >= 0 else keep

    def score_mod(score, b_, h, qi, ki):
        return softcap * torch.tanh(score / softcap)

    mask = create_block_mask(mask_mod, b, None, s, s, device="cuda")
    flex = torch.compile(flex_attention, dynamic=False)
    mod = score_mod if softcap > 0 else None
    return lambda: flex(q, k, v, score_mod=mod, block_mask=mask)


def main():
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    # (label, batch, seq, hq, hkv, qk, v, window left (-1: none), soft cap (0: none))
    shapes = [("Gemma-2-9B local: 16/8 d256 window 4096, cap 50, B2 S8192", 2, 8192, 16, 8, 256, 256, 4095, 50.0),
              ("Gemma-2-9B global: 16/8 d256 cap 50, B4 S4096", 4, 4096, 16, 8, 256, 256, -1, 50.0),
              ("Mistral-7B: 32/8 d128 window 4096, B2 S8192", 2, 8192, 32, 8, 128, 128, 4095, 0.0)]
    rows = []
    for label, b, s, heads, hkv, dqk, dv, window, softcap in shapes:
        fl = 2.0 * heads * b * visible_pairs(s, window) * (dqk + dv)
        extra = (f"window={window},0 " if window >= 0 else "") + (f"softcap={softcap:g}" if softcap else "")
        fns = {"mlagen": mlagen_fn(rt, "sm_90a", [s] * b, heads, True, dqk, dv, hkv, extra=extra.strip()),
               "flex": flex_fn(b, s, heads, hkv, dqk, dv, window, softcap)}
        times = {n: [] for n in fns}
        for _ in range(ROUNDS):
            for n, fn in fns.items():
                times[n].append(bench(fn))
        row = {"shape": label, "batch": b, "seq": s, "heads": heads, "kv_heads": hkv, "qk": dqk, "v": dv,
               "window": window, "softcap": softcap}
        for n, ms in times.items():
            row[n] = round(fl / statistics.median(ms) / 1e9, 1)
            row[n + "_rounds"] = [round(fl / t / 1e9, 1) for t in ms]
        print(label, row["mlagen"], row["flex"], flush=True)
        rows.append(row)
        del fns
        torch.cuda.empty_cache()
    md = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; TFLOP/s of the visible pairs, causal, bf16",
          "", "| shape | mlagen | FlexAttention | mlagen / flex |", "|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['shape']} | {r['mlagen']} | {r['flex']} | {r['mlagen'] / r['flex']:.2f} |")
    write_results("prefill_variants", rows, md)


if __name__ == "__main__":
    main()
