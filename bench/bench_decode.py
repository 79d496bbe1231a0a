"""Absorbed MLA decode (576/512, bf16, page 64): mlagen next to the GPU's copy
bandwidth, cuDNN's GQA decode, torch's bf16 GEMM and a torch bmm + softmax MLA
decode, in one process.

Run on the GPU machine from the repo root:
    PYTHONPATH=python MLAGEN_LIBRARY=carry/libmlagen.so python3 bench/bench_decode.py
Writes decode_bench.json and decode_bench.md under $OUT (or /tmp). GB/s count the
KV cache bytes read plus q and out; TFLOP/s count 2*B*H*S*(576+512). Times are
medians of triton.testing.do_bench over a plan updated once (graph-friendly).
fp8 rows: the same shapes with an fp8 e4m3 cache (1 byte a element, per-tensor
kv_scale; q and out bf16); GB/s count its bytes, and the table gives the
tokens/s ratio fp8 / bf16 (the same number of keys in less time); "fp8 q+kv"
is the same with fp8 e4m3 q (q_scale) too. The compute-bound reference is torch.matmul of two 8192 x 8192 bf16 matrices: the
table gives each shape's TFLOP/s over it. "/ cuDNN same bytes" compares with
cuDNN's GQA decode at the same batch and the same cache bytes (S 1152 for
S 4096), where fixed costs per step weigh alike; the issue's target is the
B64 S4096 reference.
Limits in the same run: on sm_90a the bench builds bench/stream_floor.cu with
the device's nvcc and times its math-free ways of reading each memory-bound
step's pages (the same pages, plans and flush, no attention math) with the
same do_bench; the fastest is the step's floor (MLAGEN_FLOOR=0 skips it).
"""
import ctypes
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import mlagen

QK, V, PAGE = 576, 512, 64


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


_flush_buffer = None


def flushed_us(fn, flush, reps=100):
    """Median us of fn, each run after `flush`: "write" (do_bench's zero_ of
    256 MB, which leaves L2 full of dirty lines), "read" (L2 left clean) or
    "none". For the probes that ask what a flush charges a step."""
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(10):
        fn()
    ts = []
    for _ in range(reps):
        if flush == "write":
            _flush_buffer.zero_()
        elif flush == "read":
            _flush_buffer.max()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts) * 1e3


def mlagen_decode(rt, arch, batch, heads, seq, fp8=False, fp8_q=False, num_sms=None,
                  in_order=False, q_len=1, tile_q=0, max_batch=None):
    """fp8: an fp8 e4m3 cache; fp8_q: fp8 e4m3 q too (per-tensor q_scale);
    q_len: query tokens a request (speculative decoding's drafts); tile_q:
    q rows a block, pinned (0: the compiler's choice);
    num_sms: the SMs the plan spreads the work over (None: the device's);
    in_order: the block table lists the pages in order (else shuffled);
    max_batch: plan on buffers for that many requests of any length, as an
    engine's are (None: for this batch of `seq` keys)."""
    kernel = rt.kernel(f"decode qk={QK} v={V} hq={heads} q_len={q_len} page={PAGE} mask=causal "
                       f"lse=1 q={'fp8e4m3' if fp8_q else 'bf16'} "
                       f"kv={'fp8e4m3' if fp8 else 'bf16'} out=bf16 "
                       + (f"tile_q={tile_q} " if tile_q else "") + f"arch={arch}")
    pages = seq // PAGE
    q = torch.randn(batch, q_len, heads, QK, device="cuda", dtype=torch.bfloat16)
    if fp8_q:
        q = (q * 32).to(torch.float8_e4m3fn)
    kv = torch.randn(batch * pages, PAGE, QK, device="cuda", dtype=torch.bfloat16)
    if fp8:
        kv = (kv * 16).to(torch.float8_e4m3fn)
    order = torch.arange if in_order else torch.randperm
    table = order(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), seq, device="cuda", dtype=torch.int32)
    out = torch.empty(batch, q_len, heads, V, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(batch, q_len, heads, device="cuda", dtype=torch.float32)
    plan = mlagen.DecodePlan(kernel, max_batch or batch, num_sms=num_sms,
                             max_seq_len=0 if max_batch else seq).update([seq] * batch)
    torch.cuda.synchronize()
    step = lambda: kernel.decode(q, kv, out, table, lens, plan, 1 / math.sqrt(192), lse=lse,
                                 kv_scale=1 / 16 if fp8 else 1.0,
                                 q_scale=1 / 32 if fp8_q else 1.0)
    step.plan = plan
    return step


_gemm_operands = None


def behind_gemm_us(step, iters=200):
    """us a step of `step` run back to back behind a 128 x 7168 x 1536 bf16
    GEMM (a layer's q projection), no flush: what early start hides of the
    step's launch under the GEMM's tail (CUDA events around `iters`)."""
    global _gemm_operands
    if _gemm_operands is None:
        _gemm_operands = (torch.randn(128, 7168, device="cuda", dtype=torch.bfloat16),
                          torch.randn(7168, 1536, device="cuda", dtype=torch.bfloat16))
    x, w = _gemm_operands
    for _ in range(20):
        x @ w; step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        x @ w; step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def stream_floor_lib():
    """bench/stream_floor.cu as a library, built once by the device's nvcc:
    (lib, None), or (None, why not)."""
    if os.environ.get("MLAGEN_FLOOR") == "0":
        return None, "MLAGEN_FLOOR=0"
    if torch.cuda.get_device_capability() != (9, 0):
        return None, "its bulk copies and tensor boxes are sm_90a code"
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        return None, "no nvcc on this machine"
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stream_floor.cu")
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()[:16]
    so = os.path.join(tempfile.gettempdir(), f"mlagen_stream_floor_{digest}.so")
    if not os.path.exists(so):
        built = subprocess.run([nvcc, "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-shared",
                                "-Xcompiler", "-fPIC", "-DMLAGEN_FLOOR_LIB", "-o", so + ".tmp", src, "-lcuda"],
                               capture_output=True, text=True)
        if built.returncode != 0:
            return None, "nvcc failed: " + built.stderr.strip()[-300:]
        os.replace(so + ".tmp", so)
    try:
        lib = ctypes.CDLL(so)
    except OSError as error:
        return None, f"cannot load {so}: {error}"
    lib.stream_floor_way_name.restype = ctypes.c_char_p
    lib.stream_floor_expected_counter.restype = ctypes.c_uint
    lib.stream_floor_launch.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return lib, None


def stream_floors(lib, batch, seq):
    """{"bf16"|"fp8": {way: us}}: each math-free way of reading batch requests of
    seq keys (pages of 64, shuffled) of a bf16 and an fp8 cache, as bench()
    times a decode step. Static ways take the plan's blocks: 2 a request
    where twice the batch fits the SMs, else 1."""
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    per_request = seq // PAGE
    pages = batch * per_request
    chunks = 2 if 2 * batch <= sms and per_request % 2 == 0 else 1
    table = torch.randperm(pages, generator=torch.Generator().manual_seed(7)).to(torch.int32).cuda()
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    lib.stream_floor_new_counter()
    sink = torch.zeros(1, dtype=torch.float32, device="cuda")
    out = {}
    for way in range(lib.stream_floor_num_ways()):
        elem = lib.stream_floor_way_elem(way)
        cache = torch.ones(pages * PAGE * QK * elem, dtype=torch.uint8, device="cuda")

        def step(way=way, cache=cache):
            err = lib.stream_floor_launch(way, cache.data_ptr(), table.data_ptr(), batch, per_request,
                                          chunks, counter.data_ptr(), sink.data_ptr(),
                                          torch.cuda.current_stream().cuda_stream)
            if err:
                raise RuntimeError(f"stream_floor_launch: CUDA error {err}")
        name = lib.stream_floor_way_name(way).decode()
        out.setdefault("bf16" if elem == 2 else "fp8", {})[name] = round(bench(step) * 1e3, 1)
        del cache
        torch.cuda.synchronize()
        # Dynamic ways claim pages from the counter: each launch claimed every page once.
        if counter.item() & 0xFFFFFFFF != lib.stream_floor_expected_counter():
            raise RuntimeError(f"stream_floor way '{name}': the page counter is off")
    return out


def cudnn_gqa_decode_GBps(batch, seq):
    """cuDNN SDPA decode, 32 q / 8 kv heads of 128, contiguous: GB/s of K and V."""
    q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, 8, seq, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    return round(2 * k.numel() * 2 / ms / 1e6, 1)


def main():
    rt = mlagen.Runtime(os.environ.get("MLAGEN_CACHE_DIR"))
    arch = mlagen.default_arch()
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "arch": arch}
    x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    res["copy_GBps"] = round(2 * x.numel() / bench(lambda: y.copy_(x)) / 1e6, 1)
    del x, y
    # cuDNN GQA decode (32 q / 8 kv heads, d128, contiguous): the peer bandwidth.
    res["cudnn_gqa_decode_B64_S4096_GBps"] = cudnn_gqa_decode_GBps(64, 4096)
    # torch's bf16 GEMM: the compute-bound peer (B128 H128 is 2/3 tensor-core work).
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    res["torch_gemm_TFLOPs"] = round(2 * 8192 ** 3 / bench(lambda: a @ b) / 1e9, 1)
    del a, b
    floor_lib, res["floor_skipped"] = stream_floor_lib()
    if res["floor_skipped"]:
        print(f"floor: skipped ({res['floor_skipped']})", flush=True)
    floors = {}
    rows = []
    for batch, heads in ((64, 16), (128, 16), (128, 128)):
        seq = 4096
        bytes_ = batch * seq * QK * 2 + batch * heads * (QK + V) * 2
        flops = 2.0 * batch * heads * seq * (QK + V)
        row = {"shape": f"B{batch} H{heads} S{seq} page {PAGE}"}
        ms = bench(mlagen_decode(rt, arch, batch, heads, seq))
        row["mlagen_us"] = round(ms * 1e3, 1)
        row["mlagen_GBps"] = round(bytes_ / ms / 1e6, 1)
        row["mlagen_TFLOPs"] = round(flops / ms / 1e9, 1)
        ms8 = bench(mlagen_decode(rt, arch, batch, heads, seq, fp8=True))
        row["fp8_us"] = round(ms8 * 1e3, 1)
        row["fp8_GBps"] = round((batch * seq * QK + batch * heads * (QK + V) * 2) / ms8 / 1e6, 1)
        row["fp8_speedup"] = round(ms / ms8, 2)
        # fp8 q on the fp8 cache (q_scale 1/32), as engines quantise q for one.
        ms8q = bench(mlagen_decode(rt, arch, batch, heads, seq, fp8=True, fp8_q=True))
        row["fp8_q_us"] = round(ms8q * 1e3, 1)
        row["fp8_q_speedup"] = round(ms / ms8q, 2)
        # The same batch with as many cache bytes (8 kv heads x 128 x K and V
        # = 4096 bytes a token against MLA's 1152): the fixed costs of a step
        # (launch, first loads, the tail; do_bench's L2 flush leaves dirty
        # lines that the next kernel writes back) weigh alike on both.
        row["cudnn_same_bytes_GBps"] = cudnn_gqa_decode_GBps(batch, seq * QK * 2 // (8 * 128 * 2 * 2))
        qq = torch.randn(batch, heads, QK, device="cuda", dtype=torch.bfloat16)
        kvc = torch.randn(batch, seq, QK, device="cuda", dtype=torch.bfloat16)

        def bmm_softmax():
            s = torch.bmm(qq, kvc.transpose(1, 2)) * (1 / math.sqrt(192))
            p = torch.softmax(s.float(), -1).to(torch.bfloat16)
            return torch.bmm(p, kvc[..., :V])
        ms = bench(bmm_softmax)
        row["torch_bmm_GBps"] = round(bytes_ / ms / 1e6, 1)
        row["torch_bmm_TFLOPs"] = round(flops / ms / 1e9, 1)
        del qq, kvc
        if floor_lib is not None and batch not in floors:
            try:
                floors[batch] = stream_floors(floor_lib, batch, seq)
            except (RuntimeError, OSError) as error:  # the floor is optional: say why it is missing
                floor_lib, res["floor_skipped"] = None, f"{type(error).__name__}: {error}"
                print(f"floor: skipped ({res['floor_skipped']})", flush=True)
        if floor_lib is not None:
            row["floor_ways_us"] = floors[batch]
            for cache in ("bf16", "fp8"):
                way, us = min(floors[batch][cache].items(), key=lambda item: item[1])
                row[f"floor_{cache}_us"], row[f"floor_{cache}_way"] = us, way
        rows.append(row)
        print(row, flush=True)
        torch.cuda.empty_cache()
    res["rows"] = rows
    md = [f"GPU: {res['gpu']}, mlagen {arch} kernels; copy {res['copy_GBps']} GB/s (read + write); cuDNN GQA decode "
          f"(B64 S4096, 32/8 heads, d128) {res['cudnn_gqa_decode_B64_S4096_GBps']} GB/s; "
          f"torch bf16 GEMM 8192^3 {res['torch_gemm_TFLOPs']} TFLOP/s",
          "", "| shape | mlagen us | mlagen GB/s | / cuDNN GQA GB/s | / cuDNN same bytes | mlagen TFLOP/s | / GEMM TFLOP/s | torch bmm GB/s | torch bmm TFLOP/s | fp8 us | fp8 GB/s | fp8 / bf16 tokens/s | fp8 q+kv us | fp8 q+kv / bf16 tokens/s |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['shape']} | {r['mlagen_us']} | {r['mlagen_GBps']} | "
                  f"{r['mlagen_GBps'] / res['cudnn_gqa_decode_B64_S4096_GBps']:.2f} | "
                  f"{r['mlagen_GBps'] / r['cudnn_same_bytes_GBps']:.2f} | "
                  f"{r['mlagen_TFLOPs']} | {r['mlagen_TFLOPs'] / res['torch_gemm_TFLOPs']:.2f} | "
                  f"{r['torch_bmm_GBps']} | {r['torch_bmm_TFLOPs']} | "
                  f"{r['fp8_us']} | {r['fp8_GBps']} | {r['fp8_speedup']} | "
                  f"{r['fp8_q_us']} | {r['fp8_q_speedup']} |")
    if floor_lib is not None:
        md += ["", "Floors in the same run: the fastest math-free way of bench/stream_floor.cu to read each step's "
               "pages (no attention math, the same pages, flush and do_bench); \"at floor\" is floor us / mlagen us",
               "", "| shape | bf16 floor us | bf16 at floor | / cuDNN GQA GB/s at the floor | fp8 floor us | "
               "fp8 at floor | fp8 q+kv at floor | floor fp8 / bf16 tokens/s |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            batch, heads = (int(x[1:]) for x in r["shape"].split()[:2])
            bytes_ = batch * 4096 * QK * 2 + batch * heads * (QK + V) * 2
            md.append(f"| {r['shape']} | {r['floor_bf16_us']} | {r['floor_bf16_us'] / r['mlagen_us']:.2f} | "
                      f"{bytes_ / r['floor_bf16_us'] / 1e3 / res['cudnn_gqa_decode_B64_S4096_GBps']:.2f} | "
                      f"{r['floor_fp8_us']} | {r['floor_fp8_us'] / r['fp8_us']:.2f} | "
                      f"{r['floor_fp8_us'] / r['fp8_q_us']:.2f} | {r['floor_bf16_us'] / r['floor_fp8_us']:.2f} |")
    out_dir = os.environ.get("OUT", "/tmp")
    json.dump(res, open(os.path.join(out_dir, "decode_bench.json"), "w"), indent=1)
    open(os.path.join(out_dir, "decode_bench.md"), "w").write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
