# Cold start of the vLLM-shaped MLA backend (python/examples): constructing
# MlagenMLAImpl fetches every kernel it needs (decode kernels by batch range,
# the cache write, the q rounding, the prefill). Timed with its kernels
# fetched together (Runtime.kernels, as the example does) against one after
# another (kernels() replaced by a loop of kernel()), each on a fresh runtime
# with an empty cache and NVRTC's own cache off. Alternating rounds. Then
# `background=True` (Runtime.kernels_async) with LOAD seconds (default 3)
# of an engine's own start-up (a sleep: its weights loading) between the
# construction and the first use: construction time, and the wait at first
# use.
import os, sys, tempfile, time
os.environ["CUDA_CACHE_DISABLE"] = "1"  # before NVRTC's first call
import torch
sys.path.insert(0, "python/examples")
import mlagen
import vllm_mla_backend as be

serial_kernels = lambda rt, sigs, jobs=0: [rt.kernel(s) for s in sigs]
parallel_kernels = mlagen.Runtime.kernels
CONFIGS = [dict(num_heads=16, page_size=64),
           dict(num_heads=128, page_size=64, kv_cache_dtype="fp8", num_spec_tokens=1),
           dict(num_heads=16, page_size=64, kv_cache_dtype="fp8", fp8_query=True)]


def cold_start(cfg, together, load=None):
    """Seconds to construct the backend cold; with `load`, (construction,
    wait at first use) for a background fetch with `load` s in between."""
    mlagen.Runtime.kernels = parallel_kernels if together else serial_kernels
    be._runtime = mlagen.Runtime(tempfile.mkdtemp())
    be._prefill_kernels.clear()
    H = cfg["num_heads"]
    W_UK = torch.randn(H, 128, 512, device="cuda")
    W_UV = torch.randn(H, 512, 128, device="cuda")
    torch.cuda.synchronize()
    t = time.perf_counter()
    impl = be.MlagenMLAImpl(W_UK=W_UK, W_UV=W_UV, background=load is not None, **cfg)
    built = time.perf_counter() - t
    if load is None:
        return built
    time.sleep(load)
    t = time.perf_counter()
    impl.decode_kernels  # the first use
    return built, time.perf_counter() - t


print(f"{os.cpu_count()} cores, {torch.cuda.get_device_name()}")
for cfg in CONFIGS:
    res = {True: [], False: []}
    for _ in range(2):
        for together in (False, True):
            res[together].append(cold_start(cfg, together))
    print(f"{cfg}: one after another {' / '.join(f'{s:.2f}' for s in res[False])} s, "
          f"together {' / '.join(f'{s:.2f}' for s in res[True])} s", flush=True)
LOAD = float(os.environ.get("LOAD", "3"))
for cfg in CONFIGS:
    rounds = [cold_start(cfg, True, LOAD) for _ in range(2)]
    print(f"{cfg}: background, {LOAD:.0f} s of loading between: constructed in "
          f"{' / '.join(f'{b * 1e3:.0f}' for b, _ in rounds)} ms, then waited "
          f"{' / '.join(f'{w:.2f}' for _, w in rounds)} s at first use", flush=True)
