# Host time of the Python binding's calls (prefill, decode, paged decode and
# the MLA and GQA cache writes), two bindings in one process: the
# tree's `mlagen` and the one at $BASE (a directory holding mlagen/__init__.py),
# both on $MLAGEN_LIBRARY. Each call is timed alone after a sync; the two
# bindings alternate in blocks of 100 calls, five blocks each, so machine
# drift hits both alike. Prints the median us a call.
import importlib.util, os, statistics, sys, time, torch
sys.path.insert(0, "bench")
import mlagen
spec = importlib.util.spec_from_file_location(
    "mlagen_base", os.path.join(os.environ["BASE"], "mlagen", "__init__.py"))
base = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base)
arch = mlagen.default_arch()
T, H = 256, 16
q, k = (torch.randn(T, H, 192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
v = torch.randn(T, H, 128, device="cuda", dtype=torch.bfloat16)
out = torch.empty(T, H, 128, device="cuda", dtype=torch.bfloat16)
lse = torch.empty(H, T, device="cuda")
cu = torch.tensor([0, 128, 256], dtype=torch.int32, device="cuda")
B, S, PAGE = 4, 4096, 64
dq = torch.randn(B, 1, 16, 576, device="cuda", dtype=torch.bfloat16)
dout = torch.empty(B, 1, 16, 512, device="cuda", dtype=torch.bfloat16)
cache = torch.randn(B * S // PAGE, PAGE, 576, device="cuda", dtype=torch.bfloat16)
table = torch.arange(B * S // PAGE, dtype=torch.int32, device="cuda").view(B, -1)
lens = torch.full((B,), S, dtype=torch.int32, device="cuda")
gq = torch.randn(B, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
gout = torch.empty_like(gq)
kc, vc = torch.randn(2, B * S // 16, 16, 8, 128, device="cuda", dtype=torch.bfloat16).unbind(0)
gtable = torch.arange(B * S // 16, dtype=torch.int32, device="cuda").view(B, -1)
# Cache writes of 16 tokens: MLA (kv_c ++ k_pe into pages of 64) and GQA (8 heads
# of 128 into pages of 16), int64 slots as vLLM passes them.
kvc, kpe = torch.randn(16, 512, device="cuda", dtype=torch.bfloat16), \
    torch.randn(16, 64, device="cuda", dtype=torch.bfloat16)
wslots = torch.arange(16, dtype=torch.int64, device="cuda")
wkey, wval = torch.randn(2, 16, 8, 128, device="cuda", dtype=torch.bfloat16).unbind(0)


def steps(m):
    rt = m.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    pk = rt.kernel(f"prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch={arch}")
    dk = rt.kernel(f"decode qk=576 v=512 hq=16 q_len=1 page={PAGE} arch={arch}")
    plan = m.DecodePlan(dk, max_batch=B).update([S] * B)
    gk = rt.kernel(f"paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 arch={arch}")
    gplan = m.DecodePlan(gk, max_batch=B).update([S] * B)
    wk = rt.kernel(f"kv_cache_write qk=576 v=512 page={PAGE} kv=bf16 arch={arch}")
    rk = rt.kernel(f"reshape_and_cache hkv=8 v=128 page=16 kv=bf16 arch={arch}")
    return {"prefill": lambda: pk.prefill(q, k, v, out, cu, cu, 128, lse=lse),
            "kv_cache_write": lambda: wk.kv_cache_write(kvc, kpe, cache, wslots),
            "reshape_and_cache": lambda: rk.reshape_and_cache(wkey, wval, kc, vc, wslots),
            "decode": lambda: dk.decode(dq, cache, dout, table, lens, plan, 576 ** -0.5),
            "paged_decode": lambda: gk.paged_decode(gq, kc, vc, gout, gtable, lens, gplan,
                                                    128 ** -0.5)}


def block(fn, n=100):
    xs = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    return xs


runs = {"base": steps(base), "new": steps(mlagen)}
times = {(b, s): [] for b in runs for s in runs[b]}
for name in runs["new"]:
    for b in runs:
        runs[b][name]()
for _ in range(5):
    for name in runs["new"]:
        for b in runs:
            times[(b, name)] += block(runs[b][name])
torch.cuda.synchronize()
print(" | ".join(f"{s} {b} {statistics.median(x) * 1e6:.2f}" for (b, s), x in times.items()),
      flush=True)
