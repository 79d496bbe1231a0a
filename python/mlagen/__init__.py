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


def _check(code):
    if code != 0:
        raise Error(code, _lib.mlagen_last_error().decode())


def canonicalize(signature: str) -> str:
    buf = ctypes.create_string_buffer(1024)
    _check(_lib.mlagen_signature_canonicalize(signature.encode(), buf, len(buf)))
    return buf.value.decode()


class Kernel:
    def __init__(self, runtime, handle, signature):
        self._runtime = runtime  # keeps the runtime (owner of the handle) alive
        self._handle = handle
        self.signature = signature

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
