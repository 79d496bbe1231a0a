# Where a short prefill block's time goes: with a library built from
# bench/probes/prefill-stamps.patch (probe only), each consumer warpgroup
# writes %globaltimer stamps over the first 64 bytes of its first output
# row: entry to `consume`, (slots 8, 9: kernel entry, after the barrier init), Q landed, first S done, last P V done, O staged,
# O copied out, its SM, and its tile counts. Runs each shape after an L2
# flush (as do_bench) and prints medians over 5 runs, in us.
# MLAGEN_LIBRARY=carry/alt/stamps/libmlagen.so python3 bench/probes/probe_prefill_stamps.py
import math, os, statistics as st, sys, torch
import mlagen

rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
shapes = [("B32 S512", 32, 512)]
H, DQK, DV = 16, 192, 128
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
for label, b, n in shapes:
    kernel = rt.kernel(f"prefill qk={DQK} v={DV} hq={H} hkv={H} mask=causal lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_90a")
    total = b * n
    q = torch.randn(total, H, DQK, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(total, H, DQK, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(total, H, DV, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(total, H * DV, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(H, total, device="cuda", dtype=torch.float32)
    cu = torch.arange(0, total + 1, n, device="cuda", dtype=torch.int32)
    run = lambda: kernel.prefill(q, k, v, out, cu, cu, n, lse=lse, softmax_scale=1 / math.sqrt(DQK))
    for _ in range(3):
        run()
    stats = {}
    for rep in range(5):
        flush.zero_()
        out.zero_()
        torch.cuda.synchronize()
        run()
        torch.cuda.synchronize()
        # [token, head, 64 bf16 = 16 int64]; warpgroup rows are 64 apart
        s = out.view(total, H, DV).view(torch.int64).view(total, H, DV // 4)[:, :, :10].cpu()
        recs = []
        for tok in range(0, total, 64):
            for h in range(H):
                r = s[tok, h].tolist()
                if r[0] == 0:
                    continue
                recs.append(r + [tok % n // 64 % 2, tok // 128, h])  # warpgroup, block (r[10], r[11], r[12])
        t0 = min(r[0] for r in recs)
        end = max(r[5] for r in recs)
        def add(key, val):
            stats.setdefault(key, []).append(val)
        add("span", (end - t0) / 1e3)
        by = {}
        for r in recs:
            tiles = r[7] & 0xffff
            by.setdefault((r[10], tiles), []).append(r)
        for (wg, tiles), rs in sorted(by.items()):
            for name, a, z in (("kernel entry to barrier", 8, 9), ("barrier to consume", 9, 0), ("q_wait", 0, 1), ("first_s", 1, 2), ("loop", 2, 3), ("stage", 3, 4), ("copy", 4, 5), ("total", 8, 5)):
                vals = [(x[z] - x[a]) / 1e3 for x in rs if x[a] and x[z]]
                if vals:
                    add(f"wg{wg} tiles{tiles} {name}", st.median(vals))
        # per SM: gaps between a block's last copy and the next block's entry
        sm = {}
        for r in recs:
            sm.setdefault(r[6], []).append(r)
        gaps, busy = [], []
        for rs in sm.values():
            blocks = {}
            for r in rs:  # the warpgroups of a block
                blocks.setdefault((r[11], r[12]), []).append(r)
            seq_ = sorted((min(x[8] for x in g), max(x[5] for x in g)) for g in blocks.values())
            busy.append(sum(e - b_ for b_, e in seq_) / 1e3)
            gaps += [(seq_[i + 1][0] - seq_[i][1]) / 1e3 for i in range(len(seq_) - 1)]
        add("gap: a block's last copy to the next's kernel entry (median)", st.median(gaps) if gaps else 0)
        add("gap 90th pct", sorted(gaps)[int(0.9 * len(gaps))] if gaps else 0)
        add("blocks per SM", len(recs) / 2 / len(sm))
        add("SM busy (median)", st.median(busy))
    print(f"== {label}")
    for key, vals in stats.items():
        print(f"  {key}: {st.median(vals):.2f}")
    sys.stdout.flush()
