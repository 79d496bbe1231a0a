# Cold start of the vLLM-shaped MLA backend (python/examples): constructing
# MlagenMLAImpl fetches every kernel it needs (decode kernels by batch range,
# the cache write, the q rounding, the prefill). Timed with its kernels
# fetched together (Runtime.kernels, as the example does) against one after
# another (kernels() replaced by a loop of kernel()), each on a fresh runtime
# with an empty cache and NVRTC's own cache off. Alternating rounds.
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


def cold_start(cfg, together):
    mlagen.Runtime.kernels = parallel_kernels if together else serial_kernels
    be._runtime = mlagen.Runtime(tempfile.mkdtemp())
    be._prefill_kernels.clear()
    H = cfg["num_heads"]
    W_UK = torch.randn(H, 128, 512, device="cuda")
    W_UV = torch.randn(H, 512, 128, device="cuda")
    torch.cuda.synchronize()
    t = time.perf_counter()
    be.MlagenMLAImpl(W_UK=W_UK, W_UV=W_UV, **cfg)
    return time.perf_counter() - t


print(f"{os.cpu_count()} cores, {torch.cuda.get_device_name()}")
for cfg in CONFIGS:
    res = {True: [], False: []}
    for _ in range(2):
        for together in (False, True):
            res[together].append(cold_start(cfg, together))
    print(f"{cfg}: one after another {' / '.join(f'{s:.2f}' for s in res[False])} s, "
          f"together {' / '.join(f'{s:.2f}' for s in res[True])} s", flush=True)
