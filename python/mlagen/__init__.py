"""A thin ctypes binding over mlagen's C API (include/mlagen-c/Runtime.h).

Takes PyTorch tensors (or anything with data_ptr(), stride(), dtype) and
passes their device pointers and element strides through; no copies.
The library is found at $MLAGEN_LIBRARY, else next to a build tree.
"""
import ctypes
import os
from pathlib import Path

_STATUS = {0: "Ok", 1: "InvalidSignature", 2: "InvalidArgument", 3: "Unsupported",
           4: "NoBackend", 5: "CompileError", 6: "DriverError", 7: "CacheError",
           8: "GeneratorError", 9: "Internal"}

NO_DISK_CACHE = 0x1
BACKEND_CUDA = 0x2
BACKEND_HIP = 0x4
COMPILE_ONLY = 0x8


class Error(RuntimeError):
    def __init__(self, code, message):
        super().__init__(f"{_STATUS.get(code, code)}: {message}")
        self.code = code


def _find_library():
    env = os.environ.get("MLAGEN_LIBRARY")
    if env:
        return env
    root = Path(__file__).resolve().parents[2]
    for build in ("build", "build-lead"):
        candidate = root / build / "lib" / "libmlagen.so"
        if candidate.exists():
            return str(candidate)
    raise FileNotFoundError("libmlagen.so not found: set MLAGEN_LIBRARY")


_lib = ctypes.CDLL(_find_library())
_lib.mlagen_last_error.restype = ctypes.c_char_p
_lib.mlagen_runtime_create.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
_lib.mlagen_runtime_destroy.argtypes = [ctypes.c_void_p]
_lib.mlagen_runtime_backend.argtypes = [ctypes.c_void_p]
_lib.mlagen_runtime_backend.restype = ctypes.c_char_p
_lib.mlagen_signature_canonicalize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
_lib.mlagen_get_kernel.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
_lib.mlagen_prefill_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_float, ctypes.c_void_p]
_lib.mlagen_decode_planner_create.argtypes = [
    ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
_lib.mlagen_decode_planner_destroy.argtypes = [ctypes.c_void_p]
_lib.mlagen_decode_planner_sizes.argtypes = [
    ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t]
_lib.mlagen_decode_plan.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_int64)]
_lib.mlagen_decode_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_float, ctypes.c_void_p]

_DECODE_NUM_SIZES = 5  # enum mlagen_decode_size


def _check(code):
    if code != 0:
        raise Error(code, _lib.mlagen_last_error().decode())


def canonicalize(signature: str) -> str:
    buf = ctypes.create_string_buffer(1024)
    _check(_lib.mlagen_signature_canonicalize(signature.encode(), buf, len(buf)))
    return buf.value.decode()


def _signature_fields(text):
    """{"op": "decode", "hq": "16", ...} from a signature's canonical text."""
    op, *pairs = canonicalize(text).split()
    return dict([("op", op)] + [pair.split("=", 1) for pair in pairs])


def _current_stream(stream):
    if stream is not None:
        return stream
    import torch
    return torch.cuda.current_stream().cuda_stream


class Kernel:
    def __init__(self, runtime, handle, signature):
        self._runtime = runtime  # keeps the runtime (owner of the handle) alive
        self._handle = handle
        self.signature = signature
        self.fields = _signature_fields(signature)

    def decode(self, q, kv_cache, out, block_table, seq_lens, plan, softmax_scale,
               lse=None, stream=None):
        """One absorbed MLA decode step (templates/DECODE_CONTRACT.md): launches
        mlagen_decode, then mlagen_decode_reduce, reading only device memory, so
        it can be captured in a CUDA graph. plan: a DecodePlan of this kernel,
        updated for this step's seq_lens. q [batch, q_len, heads, qk],
        kv_cache [num_blocks, page_size, qk] (or [num_blocks, page_size, 1, qk]),
        out [batch, q_len, heads, v] in q's dtype, block_table [batch, >= pages]
        int32, seq_lens [batch] int32 on the device (keys, new tokens included),
        lse [batch, q_len, heads] fp32 contiguous or None. softmax_scale is
        required (DeepSeek-V3: 1/sqrt(192)). stream: an int handle, None =
        current."""
        import torch
        if self.fields["op"] != "decode":
            raise ValueError(f"decode() needs a decode kernel, not {self.fields['op']}")
        if plan.kernel is not self:
            raise ValueError("plan was made for another kernel")
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[self.fields["q"]]
        qk, v = int(self.fields["qk"]), int(self.fields["v"])
        if kv_cache.dim() == 4 and kv_cache.shape[2] == 1:
            kv_cache = kv_cache.squeeze(2)  # vLLM's [blocks, page, 1, 576]
        for name, t, dims, width in (("q", q, 4, qk), ("out", out, 4, v),
                                     ("kv_cache", kv_cache, 3, qk)):
            if t.dim() != dims or t.shape[-1] != width or t.stride(-1) != 1:
                raise ValueError(f"{name} must be {dims}-d with a contiguous last dim of "
                                 f"{width}, got shape {tuple(t.shape)} strides {t.stride()}")
            if t.dtype != dtype:
                raise ValueError(f"{name} must be {dtype} (the kernel's), got {t.dtype}")
        if kv_cache.shape[1] != int(self.fields["page"]):
            raise ValueError(f"kv_cache pages hold {kv_cache.shape[1]} keys, the kernel "
                             f"{self.fields['page']}")
        batch = q.shape[0]
        if tuple(out.shape[:3]) != tuple(q.shape[:3]):
            raise ValueError(f"out {tuple(out.shape)} must match q {tuple(q.shape)} "
                             "in batch, q_len and heads")
        if (block_table.dtype != torch.int32 or block_table.dim() != 2
                or block_table.shape[0] < batch or block_table.stride(1) != 1):
            raise ValueError("block_table must be int32 [batch, pages] with unit column "
                             f"stride, got {block_table.dtype} {tuple(block_table.shape)}")
        if seq_lens.dtype != torch.int32 or seq_lens.numel() < batch or \
                not seq_lens.is_contiguous() or seq_lens.device.type == "cpu":
            raise ValueError("seq_lens must be a contiguous int32 device tensor of [batch]")
        if lse is not None and (lse.dtype != torch.float32 or not lse.is_contiguous()
                                or tuple(lse.shape) != tuple(q.shape[:3])):
            raise ValueError("lse must be a contiguous fp32 [batch, q_len, heads] tensor")
        if batch != plan.batch:
            raise ValueError(f"q holds {batch} requests, the plan was updated for "
                             f"{plan.batch}")
        strides = (ctypes.c_int64 * 8)(q.stride(0), q.stride(1), q.stride(2),
                                       out.stride(0), out.stride(1), out.stride(2),
                                       kv_cache.stride(0), kv_cache.stride(1))
        _check(_lib.mlagen_decode_run(
            plan._handle, q.data_ptr(), kv_cache.data_ptr(), out.data_ptr(),
            lse.data_ptr() if lse is not None else None, block_table.data_ptr(),
            block_table.stride(0), seq_lens.data_ptr(), plan.plan.data_ptr(),
            plan.partial_out.data_ptr(), plan.partial_lse.data_ptr(), batch, q.shape[1],
            q.shape[2], strides, float(softmax_scale), _current_stream(stream)))

    def prefill(self, q, k, v, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                lse=None, softmax_scale=0.0, stream=None):
        """q [total_q, hq, dqk], k [total_k, hkv, dqk], v [total_k, hkv, dv],
        out [total_q, hq*dv] or [total_q, hq, dv], lse [hq, total_q] fp32,
        cu_seqlens int32 [batch+1]; stream: an int handle, None = current."""
        if stream is None:
            import torch
            stream = torch.cuda.current_stream().cuda_stream
        if out.dim() == 2 and out.stride(1) != 1:
            raise ValueError("out [total_q, hq*dv] must be contiguous in its last dim")
        out_head = out.stride(1) if out.dim() == 3 else 0  # 0: head_dim_v
        strides = (ctypes.c_int64 * 9)(
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
            out.stride(0), out_head, lse.stride(0) if lse is not None else 0)
        _check(_lib.mlagen_prefill_run(
            self._handle, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
            lse.data_ptr() if lse is not None else None,
            cu_seqlens_q.data_ptr(), cu_seqlens_k.data_ptr(), cu_seqlens_q.numel() - 1,
            int(max_seqlen_q), strides, float(softmax_scale), stream))


class DecodePlan:
    """The split-KV plan of a decode kernel (mlagen/Runtime/DecodePlan.h): fixed
    device buffers sized once for up to max_batch requests, and update(), which
    plans a step on the host and copies the plan into them asynchronously. The
    buffers never move, so a kernel.decode() captured in a CUDA graph replays
    with whatever plan the last update() copied.

    num_sms: the device's SMs (None: asked from torch). max_seq_len: keys of
    the longest request, required by batch-invariant kernels."""

    def __init__(self, kernel, max_batch, num_sms=None, max_seq_len=0, device=None):
        import torch
        device = torch.device(device or "cuda")
        if num_sms is None:
            num_sms = torch.cuda.get_device_properties(device).multi_processor_count
        handle = ctypes.c_void_p()
        _check(_lib.mlagen_decode_planner_create(kernel._handle, int(max_batch),
                                                 int(num_sms), int(max_seq_len),
                                                 ctypes.byref(handle)))
        self._handle = handle
        self.kernel = kernel
        sizes = (ctypes.c_int64 * _DECODE_NUM_SIZES)()
        _check(_lib.mlagen_decode_planner_sizes(handle, sizes, _DECODE_NUM_SIZES))
        plan_ints, partial_out, partial_lse, self.work_capacity, self.slot_capacity = sizes
        self.max_batch = int(max_batch)
        self.num_sms = int(num_sms)
        # torch's allocations are 256-byte aligned: the kernel reads int4 work items.
        self.plan = torch.zeros(plan_ints, dtype=torch.int32, device=device)
        self.partial_out = torch.empty(partial_out, dtype=torch.float32, device=device)
        self.partial_lse = torch.empty(partial_lse, dtype=torch.float32, device=device)
        self.batch = 0
        self.num_work = 0

    def update(self, seq_lens):
        """Plans a step for seq_lens (host values: a list or a CPU tensor; a
        device tensor would cost a sync) and copies the plan to the device on
        the current stream. The pinned staging tensor is new each time, and
        torch's caching host allocator keeps it until the copy has run, so
        consecutive updates never overwrite a plan in flight."""
        import torch
        lens = torch.as_tensor(seq_lens, dtype=torch.int32, device="cpu").contiguous()
        staging = torch.empty(self.plan.numel(), dtype=torch.int32, pin_memory=True)
        used = ctypes.c_int64()
        _check(_lib.mlagen_decode_plan(self._handle, lens.data_ptr(), lens.numel(),
                                       staging.data_ptr(), staging.numel(),
                                       ctypes.byref(used)))
        self.plan[:used.value].copy_(staging[:used.value], non_blocking=True)
        self.batch = lens.numel()
        self.num_work = int(staging[0])
        return self

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.mlagen_decode_planner_destroy(self._handle)
            self._handle = None


class Runtime:
    def __init__(self, cache_dir=None, flags=0):
        handle = ctypes.c_void_p()
        _check(_lib.mlagen_runtime_create(cache_dir.encode() if cache_dir else None,
                                          flags, ctypes.byref(handle)))
        self._handle = handle

    @property
    def backend(self) -> str:
        return _lib.mlagen_runtime_backend(self._handle).decode()

    def kernel(self, signature: str) -> Kernel:
        handle = ctypes.c_void_p()
        _check(_lib.mlagen_get_kernel(self._handle, signature.encode(), ctypes.byref(handle)))
        return Kernel(self, handle, signature)

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.mlagen_runtime_destroy(self._handle)
            self._handle = None
