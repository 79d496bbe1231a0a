"""A thin ctypes binding over mlagen's C API (include/mlagen-c/Runtime.h).

Takes PyTorch tensors (prefill also DLPack objects: CuPy, JAX, ...) and
passes their device pointers and element strides through; no copies.
Runtime(bundle_paths=...) loads AOT bundles; Runtime.compile() and
mlagen.compile() return code objects with metadata, no GPU needed.
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
NO_GENERATOR = 0x10


class Error(RuntimeError):
    def __init__(self, code, message):
        super().__init__(f"{_STATUS.get(code, code)}: {message}")
        self.code = code
        self.name = _STATUS.get(code, "Unknown")
        self.message = message


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
_lib.mlagen_get_kernels.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
_lib.mlagen_prefill_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
    ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_float, ctypes.c_void_p,
    ctypes.c_void_p]
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
    ctypes.POINTER(ctypes.c_int64), ctypes.c_float, ctypes.c_float, ctypes.c_float,
    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
_lib.mlagen_decode_run_checked.argtypes = _lib.mlagen_decode_run.argtypes[:-4] + [
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ctypes.c_void_p]
_lib.mlagen_decode_error_check.argtypes = [ctypes.c_void_p]
_lib.mlagen_paged_decode_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
_DECODE_ERROR_FLAG_INTS = 8  # MLAGEN_DECODE_ERROR_FLAG_INTS
_lib.mlagen_expand_page_indices_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
_lib.mlagen_kv_cache_write_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
    ctypes.c_void_p]
_lib.mlagen_reshape_and_cache_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
_lib.mlagen_gather_cache_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
_lib.mlagen_merge_attn_states_run.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]

_lib.mlagen_status_name.argtypes = [ctypes.c_int]
_lib.mlagen_status_name.restype = ctypes.c_char_p
_lib.mlagen_compile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                                ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]

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


_raw_stream = None


def _current_stream(stream, like=None):
    """`stream`, or torch's current stream (of `like`'s device, else the
    current device) as an int handle. torch's private raw getter (what
    Triton calls) costs 0.1 us where the public
    current_stream().cuda_stream costs 5-8; the public call stands in where
    torch lacks it."""
    global _raw_stream
    if stream is not None:
        return stream
    if _raw_stream is None:
        import torch
        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        device = getattr(torch._C, "_cuda_getDevice", None)
        _raw_stream = (lambda index: get(device() if index is None else index)) \
            if get and device else \
            (lambda index: torch.cuda.current_stream(index).cuda_stream)
    return _raw_stream(None if like is None else like.get_device())


_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16"}


def _fp8_dtypes(torch, fields):
    """The torch dtypes an fp8 e4m3 tensor of a kernel with signature
    `fields` may have: the target's e4m3 (gfx942 reads FNUZ, every other
    target OCP) or raw uint8 bytes."""
    wrong = "float8_e4m3fn" if fields.get("arch") == "gfx942" else "float8_e4m3fnuz"
    return tuple(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e4m3fnuz")
                 if hasattr(torch, n) and n != wrong) + (torch.uint8,)


def _check_paged_kv_copy(f, dtype, rows, k_cache, v_cache, k_scale, v_scale, scale_rule,
                         slots_name, slots):
    """The arguments of a copy between token rows and a paged GQA cache
    (reshape_and_cache, gather_cache) for kernel fields `f`, checked: `rows`,
    (name, tensor) pairs of [tokens, hkv, v] in `dtype`; the caches
    [num_blocks, page, hkv, v] in the kernel's kv dtype (fp8: float8_e4m3fn,
    or fnuz on gfx942, or uint8) with one float32 device scale each
    (`scale_rule`, "... {}" with the scale's name, says what one means); the
    slots, int32 or int64 [tokens]. Returns the scales' pointers (None for a
    16-bit cache), the rows' and the caches' pointers, tokens, the slots'
    pointer and bits, and the strides in the C API's order."""
    import torch
    heads, dim, page = int(f["hkv"]), int(f["v"]), int(f["page"])
    fp8 = f["kv"] == "fp8e4m3"
    facts = []
    for name, t in rows:
        shape, st, ptr, _ = _device_tensor_facts(name, t, dtype, (3,), dim)
        if shape[1] != heads:
            raise ValueError(f"{name} must be [tokens, hkv={heads}, v={dim}], got shape "
                             f"{tuple(shape)}")
        facts.append((shape, st, ptr))
    allowed = _fp8_dtypes(torch, f) if fp8 else (dtype,)
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype not in allowed:
            raise ValueError(f"{name} must be {' or '.join(map(str, allowed))} (the "
                             f"kernel's), got {t.dtype}")
        shape, st, ptr, _ = _device_tensor_facts(name, t, None, (4,), dim,
                                                 align=8 if fp8 else 16)
        if shape[1] != page or shape[2] != heads:
            raise ValueError(f"{name} must be [num_blocks, page={page}, hkv={heads}, "
                             f"v={dim}], got shape {tuple(shape)}")
        facts.append((shape, st, ptr))
    scales = [None, None]
    if fp8:
        for i, (name, scale) in enumerate((("k_scale", k_scale), ("v_scale", v_scale))):
            if scale is None:
                raise ValueError(f"{name} is required for an fp8 cache: a float32 device "
                                 f"tensor of one element ({scale_rule.format(name)})")
            scale = as_tensor(scale, name)
            _check_device_tensor(name, scale, torch.float32, None, None, align=4)
            if scale.numel() != 1:
                raise ValueError(f"{name} must hold one element, got {scale.numel()}")
            scales[i] = scale.data_ptr()
    (r0_shape, r0_st, r0_ptr), (r1_shape, r1_st, r1_ptr), (_, kc_st, kc_ptr), \
        (_, vc_st, vc_ptr) = facts
    tokens, slots_ptr, slot_bits = _slot_tensor(
        slots_name, slots, ((rows[0][0], r0_shape), (rows[1][0], r1_shape)))
    strides = _INT64x10(r0_st[0], r0_st[1], r1_st[0], r1_st[1], kc_st[0], kc_st[1], kc_st[2],
                        vc_st[0], vc_st[1], vc_st[2])
    return scales, (r0_ptr, r1_ptr), (kc_ptr, vc_ptr), tokens, slots_ptr, slot_bits, strides


def as_tensor(obj, name="tensor"):
    """A torch tensor viewing `obj` without a copy: a torch tensor as is,
    anything with __dlpack__ (CuPy, JAX, NumPy, ...) through torch.from_dlpack.
    TypeError, naming the argument, for anything else."""
    import torch
    if isinstance(obj, torch.Tensor):
        return obj
    if hasattr(obj, "__dlpack__"):
        try:
            return torch.from_dlpack(obj)
        except Exception as e:  # an unsupported dtype or device in the capsule
            raise TypeError(f"{name}: DLPack import failed: {e}") from e
    raise TypeError(f"{name} must be a torch tensor or support DLPack (__dlpack__), "
                    f"got {type(obj).__name__}")


def _check_device_tensor(name, t, dtype=None, dims=None, last=None, align=16):
    """ValueError naming the argument unless t lives on a GPU, has `dtype`,
    `dims` dimensions, a contiguous last dimension of `last` elements and a
    data pointer aligned to `align` bytes."""
    if t.device.type != "cuda":  # torch names ROCm devices "cuda" too
        raise ValueError(f"{name} must be on the GPU, got a tensor on {t.device}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    if dims is not None and t.dim() not in ((dims,) if isinstance(dims, int) else dims):
        raise ValueError(f"{name} must be {dims}-d, got shape {tuple(t.shape)}")
    if last is not None and t.shape[-1] != last:
        raise ValueError(f"{name}'s last dim must be {last}, got shape {tuple(t.shape)}")
    if t.numel() > 0 and t.dim() > 0 and t.stride(-1) != 1 and t.shape[-1] > 1:
        raise ValueError(f"{name} must be contiguous in its last dim, got strides "
                         f"{t.stride()}")
    if align and t.data_ptr() % align:
        raise ValueError(f"{name} must be {align}-byte aligned (data_ptr "
                         f"{t.data_ptr():#x}); slice on a multiple of {align // t.element_size()} "
                         "elements or copy it")
    return t


def _device_tensor_facts(name, t, dtype, dims, last=None, align=16):
    """(shape, strides, data_ptr, device) of t, each read once, after
    _check_device_tensor's checks in its order (which raises its message
    where one fails). dims: a tuple, or None for any."""
    device, shape = t.device, t.shape
    if (device.type != "cuda" or (dtype is not None and t.dtype != dtype)
            or (dims is not None and len(shape) not in dims)
            or (last is not None and shape[-1] != last)):
        _check_device_tensor(name, t, dtype, _dims_arg(dims), last, align)
    stride, ptr = t.stride(), t.data_ptr()
    if (stride and stride[-1] != 1 and shape[-1] > 1) or (align and ptr % align):
        _check_device_tensor(name, t, dtype, _dims_arg(dims), last, align)
    return shape, stride, ptr, device


def _dims_arg(dims):
    """dims as _check_device_tensor takes it (and words its message)."""
    return dims[0] if dims is not None and len(dims) == 1 else dims


def _slot_tensor(name, t, rows):
    """(tokens, data_ptr, bits) of an int32 or int64 device tensor of slots,
    contiguous, whose length both (name, shape) of `rows` share."""
    import torch
    if t.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name} must be int32 or int64, got {t.dtype}")
    size = t.element_size()
    shape, st, ptr, _ = _device_tensor_facts(name, t, t.dtype, (1,), align=size)
    tokens = shape[0]
    if any(r[0] != tokens for _, r in rows) or (tokens > 1 and st[0] != 1):
        (a, sa), (b, sb) = rows
        raise ValueError(f"{a} {tuple(sa)}, {b} {tuple(sb)} and a contiguous {name} must "
                         f"agree in tokens ({tokens})")
    return tokens, ptr, 8 * size


def _same_device(devices):
    """ValueError unless every device (each a GPU) is the first one."""
    if any(d != devices[0] for d in devices):
        raise ValueError(f"all tensors must be on one device, got "
                         f"{sorted({str(d) for d in devices})}")


def _strided_facts(rules):
    """(shape, strides) of each (name, tensor, dims, last dim, allowed dtypes)
    of `rules`, read once: ValueError, naming the tensor, unless it has
    `dims` dimensions, a contiguous last dim of that size and an allowed
    dtype."""
    facts = []
    for name, t, dims, width, allowed in rules:
        shape, st = t.shape, t.stride()
        if len(shape) != dims or shape[-1] != width or st[-1] != 1:
            raise ValueError(f"{name} must be {dims}-d with a contiguous last dim of "
                             f"{width}, got shape {tuple(shape)} strides {st}")
        if t.dtype not in allowed:
            raise ValueError(f"{name} must be {' or '.join(map(str, allowed))} (the "
                             f"kernel's), got {t.dtype}")
        facts.append((shape, st))
    return facts


def _check_step_tables(torch, block_table, seq_lens, lse, rows, rows_text, batch):
    """A decode step's block table (int32 [batch, pages], unit column
    stride), seq_lens (contiguous int32 [batch] on the device) and optional
    lse (contiguous fp32 of shape `rows`, worded `rows_text`). Returns the
    block table's row stride."""
    bt_shape, bt_st = block_table.shape, block_table.stride()
    if (block_table.dtype != torch.int32 or len(bt_shape) != 2
            or bt_shape[0] < batch or bt_st[1] != 1):
        raise ValueError("block_table must be int32 [batch, pages] with unit column "
                         f"stride, got {block_table.dtype} {tuple(bt_shape)}")
    if seq_lens.dtype != torch.int32 or seq_lens.numel() < batch or \
            not seq_lens.is_contiguous() or seq_lens.is_cpu:
        raise ValueError("seq_lens must be a contiguous int32 device tensor of [batch]")
    if lse is not None and (lse.dtype != torch.float32 or not lse.is_contiguous()
                            or lse.shape != rows):
        raise ValueError(f"lse must be a contiguous fp32 {rows_text} tensor")
    return bt_st[0]


_INT64x4, _INT64x8, _INT64x9, _INT64x10 = (ctypes.c_int64 * n for n in (4, 8, 9, 10))


class Kernel:
    def __init__(self, runtime, handle, signature):
        self._runtime = runtime  # keeps the runtime (owner of the handle) alive
        self._handle = handle
        self.signature = signature
        self.fields = _signature_fields(signature)
        self._decode_rules = None
        self._paged_rules = None
        self._prefill_rules = None

    def _make_paged_rules(self, torch):
        """paged_decode()'s checks: q/out dtype, the caches' dtypes, whether
        the cache is fp8, d, hq, hkv, page, q_len."""
        f = self.fields
        dtype = getattr(torch, _DTYPE_NAMES[f["out"]])
        fp8_cache = f.get("kv") == "fp8e4m3"
        return (dtype, _fp8_dtypes(torch, self.fields) if fp8_cache else (dtype,), fp8_cache,
                int(f["v"]), int(f["hq"]), int(f["hkv"]), int(f["page"]), int(f["q_len"]))

    def _make_prefill_rules(self, torch):
        """prefill()'s checks: the q, kv and out dtypes, hq, hkv, qk, v,
        whether the kernel writes an LSE and whether it takes ALiBi slopes."""
        f = self.fields
        return (tuple(getattr(torch, _DTYPE_NAMES[f[n]]) for n in ("q", "kv", "out")),
                int(f["hq"]), int(f["hkv"]), int(f["qk"]), int(f["v"]),
                f.get("lse") != "0", f.get("alibi") == "1")

    def _make_decode_rules(self, torch):
        """decode()'s checks: (name, dims, last dim, allowed dtypes) for q,
        out and kv_cache, and the page size."""
        dtype = getattr(torch, _DTYPE_NAMES[self.fields["out"]])
        qk, v = int(self.fields["qk"]), int(self.fields["v"])
        fp8_dtypes = _fp8_dtypes(torch, self.fields)
        fp8_cache = self.fields.get("kv") == "fp8e4m3"
        fp8_q = self.fields.get("q") == "fp8e4m3"
        return ((("q", 4, qk, fp8_dtypes if fp8_q else (dtype,)),
                 ("out", 4, v, (dtype,)),
                 ("kv_cache", 3, qk, fp8_dtypes if fp8_cache else (dtype,))),
                int(self.fields["page"]))

    def decode(self, q, kv_cache, out, block_table, seq_lens, plan, softmax_scale,
               lse=None, stream=None, kv_scale=1.0, checked=False, max_pages=0,
               q_scale=1.0):
        """One absorbed MLA decode step (templates/DECODE_CONTRACT.md): launches
        mlagen_decode, then mlagen_decode_reduce, reading only device memory, so
        it can be captured in a CUDA graph. plan: a DecodePlan of this kernel,
        updated for this step's seq_lens. q [batch, q_len, heads, qk],
        kv_cache [num_blocks, page_size, qk] (or [num_blocks, page_size, 1, qk]),
        out [batch, q_len, heads, v] in q's dtype, block_table [batch, >= pages]
        int32, seq_lens [batch] int32 on the device (keys, new tokens included),
        lse [batch, q_len, heads] fp32 contiguous or None. softmax_scale is
        required (DeepSeek-V3: 1/sqrt(192)). stream: an int handle, None =
        current. A kernel with kv=fp8e4m3 takes an fp8 e4m3 cache
        (torch.float8_e4m3fn on NVIDIA and gfx950, float8_e4m3fnuz on gfx942,
        or its raw uint8 bytes) with q and out bf16; kv_scale is the cache's
        per-tensor scale (key and value = kv_scale * stored). A kernel with
        q=fp8e4m3 (and an fp8 cache) takes q in the cache's fp8 dtype with
        out bf16; q_scale is q's per-tensor scale (q = q_scale * stored).
        On sm_90a an fp8 cache is multiplied as e4m3 by the tensor cores
        with fp8 q, and with bf16 q where q_len x heads <= 16 (q split into
        e4m3 hi + lo): their sums carry about 2^-12 of each logit (2^-11
        where its terms share a sign; fp8 q in 64-row blocks, whose S has one
        accumulator: an LSE 1.6e-2 off at logits of 80), far less than the
        cache's own e4m3 rounding; bf16 q in larger blocks is widened to
        fp16 and exact.

        checked=True: the kernel also verifies on the device that seq_lens[b]
        <= max_pages * page (max_pages 0: block_table's row stride) and that
        every page id it reads is in [0, kv_cache.shape[0]); a bad request
        reads nothing of the cache and gets zeros (LSE -inf), and the first
        violation is recorded in plan.error_flags (never read back here).
        After synchronising, plan.check() raises mlagen.Error naming it."""
        import torch
        if self.fields["op"] != "decode":
            raise ValueError(f"decode() needs a decode kernel, not {self.fields['op']}")
        if plan.kernel is not self:
            raise ValueError("plan was made for another kernel")
        # What the checks compare against, worked out once per kernel.
        if self._decode_rules is None:
            self._decode_rules = self._make_decode_rules(torch)
        tensor_rules, page = self._decode_rules
        if kv_cache.dim() == 4 and kv_cache.shape[2] == 1:
            kv_cache = kv_cache.squeeze(2)  # vLLM's [blocks, page, 1, 576]
        (q_shape, q_st), (o_shape, o_st), (kv_shape, kv_st) = _strided_facts(
            (name, t, dims, width, allowed)
            for (name, dims, width, allowed), t in zip(tensor_rules, (q, out, kv_cache)))
        if kv_shape[1] != page:
            raise ValueError(f"kv_cache pages hold {kv_shape[1]} keys, the kernel "
                             f"{page}")
        batch = q_shape[0]
        if o_shape[:3] != q_shape[:3]:
            raise ValueError(f"out {tuple(o_shape)} must match q {tuple(q_shape)} "
                             "in batch, q_len and heads")
        bt_stride = _check_step_tables(torch, block_table, seq_lens, lse, q_shape[:3],
                                       "[batch, q_len, heads]", batch)
        if batch != plan.batch:
            raise ValueError(f"q holds {batch} requests, the plan was updated for "
                             f"{plan.batch}")
        strides = _INT64x8(q_st[0], q_st[1], q_st[2], o_st[0], o_st[1], o_st[2], kv_st[0],
                           kv_st[1])
        flags = plan.error_flags.data_ptr() if checked else None
        _check(_lib.mlagen_decode_run_checked(
            plan._handle, q.data_ptr(), kv_cache.data_ptr(), out.data_ptr(),
            lse.data_ptr() if lse is not None else None, block_table.data_ptr(),
            bt_stride, seq_lens.data_ptr(), plan.plan.data_ptr(),
            plan.partial_out.data_ptr(), plan.partial_lse.data_ptr(), batch, q_shape[1],
            q_shape[2], strides, float(softmax_scale), float(q_scale), float(kv_scale),
            flags, kv_shape[0] if checked else 0, int(max_pages) if checked else 0,
            plan.num_work, plan.slots, plan.groups, _current_stream(stream)))

    def paged_decode(self, q, k_cache, v_cache, out, block_table, seq_lens, plan,
                     softmax_scale, lse=None, k_scale=None, v_scale=None, alibi_slopes=None,
                     stream=None):
        """One paged GQA decode step (templates/PAGED_DECODE_CONTRACT.md):
        mlagen_paged_decode, then mlagen_paged_decode_reduce, reading only
        device memory, so it can be captured in a CUDA graph. plan: a
        DecodePlan of this kernel, updated for this step's seq_lens. q
        [batch, q_len, hq, d], k_cache and v_cache [num_blocks, page, hkv, d]
        with equal strides (vLLM's kv_cache.unbind(0)), out [batch, q_len, hq,
        d] in q's dtype, block_table int32 [batch, >= pages], seq_lens int32
        [batch] on the device (keys, the q_len new tokens included), lse fp32
        [batch, q_len, hq] contiguous or None. softmax_scale is required.
        A kernel with kv=fp8e4m3 takes fp8 e4m3 caches (float8_e4m3fn on
        NVIDIA and gfx950, float8_e4m3fnuz on gfx942, or raw uint8) and
        k_scale, v_scale: fp32 device tensors of one element (key = k_scale *
        stored), read on the device so a captured graph follows updates.
        alibi_slopes: fp32 [hq] on the device, required by an alibi=1 kernel,
        refused by any other (-slope * (position - key) added to the capped
        logits, as prefill's)."""
        import torch
        if self.fields["op"] != "paged_decode":
            raise ValueError(f"paged_decode() needs a paged_decode kernel, not {self.fields['op']}")
        if plan.kernel is not self:
            raise ValueError("plan was made for another kernel")
        # What the checks compare against, worked out once per kernel.
        if self._paged_rules is None:
            self._paged_rules = self._make_paged_rules(torch)
        dtype, cache_dtypes, fp8_cache, d, hq, hkv, page, q_len = self._paged_rules
        (q_shape, q_st), (o_shape, o_st), (k_shape, k_st), (v_shape, v_st) = _strided_facts(
            (("q", q, 4, d, (dtype,)), ("out", out, 4, d, (dtype,)),
             ("k_cache", k_cache, 4, d, cache_dtypes), ("v_cache", v_cache, 4, d, cache_dtypes)))
        for name, shape in (("k_cache", k_shape), ("v_cache", v_shape)):
            if shape[1] != page or shape[2] != hkv:
                raise ValueError(f"{name} must be [blocks, {page}, {hkv}, {d}], "
                                 f"got {tuple(shape)}")
        if k_st != v_st or k_shape != v_shape:
            raise ValueError("k_cache and v_cache must have equal shapes and strides")
        batch = q_shape[0]
        if q_shape[1] != q_len or q_shape[2] != hq:
            raise ValueError(f"q must be [batch, {q_len}, {hq}, {d}], got {tuple(q_shape)}")
        if o_shape != q_shape:
            raise ValueError(f"out {tuple(o_shape)} must match q {tuple(q_shape)}")
        bt_stride = _check_step_tables(torch, block_table, seq_lens, lse, q_shape[:3],
                                       "[batch, q_len, hq]", batch)
        scales = [None, None]
        if fp8_cache:
            for i, (name, t) in enumerate((("k_scale", k_scale), ("v_scale", v_scale))):
                if t is None or not torch.is_tensor(t) or t.dtype != torch.float32 \
                        or t.numel() != 1 or t.is_cpu:
                    raise ValueError(f"{name} must be a one-element fp32 device tensor "
                                     "for an fp8 cache")
                scales[i] = t.data_ptr()
        if self.fields.get("alibi") == "1":
            if alibi_slopes is None:
                raise ValueError("alibi_slopes is required: the kernel's signature says alibi=1")
            # The C API cannot see the array's length: a short one reads past its end.
            _check_device_tensor("alibi_slopes", alibi_slopes, torch.float32, 1, align=4)
            if alibi_slopes.numel() != hq or not alibi_slopes.is_contiguous():
                raise ValueError(f"alibi_slopes must be a contiguous [hq={hq}] tensor, got "
                                 f"shape {tuple(alibi_slopes.shape)} strides {alibi_slopes.stride()}")
        elif alibi_slopes is not None:
            raise ValueError("alibi_slopes given, but the kernel's signature says alibi=0 "
                             "(build it with alibi=1)")
        if batch != plan.batch:
            raise ValueError(f"q holds {batch} requests, the plan was updated for "
                             f"{plan.batch}")
        strides = _INT64x9(q_st[0], q_st[1], q_st[2], o_st[0], o_st[1], o_st[2], k_st[0],
                           k_st[1], k_st[2])
        _check(_lib.mlagen_paged_decode_run(
            plan._handle, q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(),
            out.data_ptr(), lse.data_ptr() if lse is not None else None,
            block_table.data_ptr(), bt_stride, seq_lens.data_ptr(),
            plan.plan.data_ptr(), plan.partial_out.data_ptr(), plan.partial_lse.data_ptr(),
            batch, q_shape[1], hq, hkv, strides, float(softmax_scale), scales[0], scales[1],
            alibi_slopes.data_ptr() if alibi_slopes is not None else None,
            plan.slots, _current_stream(stream)))

    def expand_page_indices(self, block_table, cu_seqlens, slots, max_seqlen,
                            seq_starts=None, stream=None):
        """Page-index expansion: for request b and token i < cu_seqlens[b+1] -
        cu_seqlens[b], slots[cu_seqlens[b] + i] = block_table[b, p // page] *
        page + p % page with p = seq_starts[b] + i (0 without seq_starts; a
        context chunk's begin). block_table int32 [batch, pages] (unit column
        stride), cu_seqlens int32 [batch + 1], seq_starts int32 [batch], slots
        int32 [>= cu_seqlens[-1]], all on the device. max_seqlen must bound
        every request's token count (it sizes the grid; not checked against
        the device cu_seqlens). stream: an int handle, None = current."""
        import torch
        if self.fields["op"] != "expand_page_indices":
            raise ValueError(f"expand_page_indices() needs an expand_page_indices kernel, "
                             f"not {self.fields['op']}")
        block_table = as_tensor(block_table, "block_table")
        cu_seqlens = as_tensor(cu_seqlens, "cu_seqlens")
        slots = as_tensor(slots, "slots")
        _check_device_tensor("block_table", block_table, torch.int32, 2, align=4)
        _check_device_tensor("cu_seqlens", cu_seqlens, torch.int32, 1, align=4)
        _check_device_tensor("slots", slots, torch.int32, 1, align=4)
        batch = cu_seqlens.numel() - 1
        if batch < 0 or not cu_seqlens.is_contiguous():
            raise ValueError("cu_seqlens must be a contiguous int32 [batch + 1] tensor")
        if block_table.shape[0] < batch:
            raise ValueError(f"block_table has {block_table.shape[0]} rows for {batch} requests")
        if seq_starts is not None:
            seq_starts = as_tensor(seq_starts, "seq_starts")
            _check_device_tensor("seq_starts", seq_starts, torch.int32, 1, align=4)
            if seq_starts.numel() < batch or not seq_starts.is_contiguous():
                raise ValueError(f"seq_starts must be a contiguous int32 [batch={batch}] tensor")
        if int(max_seqlen) < 0:
            raise ValueError(f"max_seqlen must be >= 0, got {max_seqlen}")
        stream = _current_stream(stream, slots)
        _check(_lib.mlagen_expand_page_indices_run(
            self._handle, block_table.data_ptr(), block_table.stride(0), cu_seqlens.data_ptr(),
            seq_starts.data_ptr() if seq_starts is not None else None, slots.data_ptr(),
            batch, int(max_seqlen), stream))

    def kv_cache_write(self, kv_c, k_pe, kv_cache, slot_mapping, stream=None, scale=None):
        """MLA KV-cache write (vLLM's concat_and_cache_mla): for token t with
        slot = slot_mapping[t] >= 0 (-1 skips), cache row (slot // page, slot %
        page) = kv_c[t] ++ k_pe[t]. kv_c [tokens, v] (or [tokens, 1, v]), k_pe
        [tokens, qk - v] (or [tokens, 1, qk - v]) in the kernel's in dtype,
        kv_cache [num_blocks, page, qk] (or [num_blocks, page, 1, qk]) in its
        kv dtype, token strides multiples of 8; slot_mapping int32 or int64
        [tokens] on the device. A kernel with kv=fp8e4m3 stores fp8(x / scale)
        (round to nearest even, saturated): kv_cache is float8_e4m3fn
        (float8_e4m3fnuz on gfx942) or uint8, scale a float32 device tensor
        of one element. stream: an int handle, None = current."""
        import torch
        f = self.fields
        if f["op"] != "kv_cache_write":
            raise ValueError(f"kv_cache_write() needs a kv_cache_write kernel, not {f['op']}")
        qk, v, page = int(f["qk"]), int(f["v"]), int(f["page"])
        fp8 = f["kv"] == "fp8e4m3"
        dtype = getattr(torch, _DTYPE_NAMES[f.get("in", f["kv"])])
        kv_c, k_pe, kv_cache = (as_tensor(t, n) for t, n in (
            (kv_c, "kv_c"), (k_pe, "k_pe"), (kv_cache, "kv_cache")))
        slot_mapping = as_tensor(slot_mapping, "slot_mapping")
        if kv_c.dim() == 3 and kv_c.shape[1] == 1:
            kv_c = kv_c.squeeze(1)
        if k_pe.dim() == 3 and k_pe.shape[1] == 1:
            k_pe = k_pe.squeeze(1)
        if kv_cache.dim() == 4 and kv_cache.shape[2] == 1:
            kv_cache = kv_cache.squeeze(2)  # vLLM's [blocks, page, 1, 576]
        c_shape, c_st, c_ptr, _ = _device_tensor_facts("kv_c", kv_c, dtype, (2,), v)
        p_shape, p_st, p_ptr, _ = _device_tensor_facts("k_pe", k_pe, dtype, (2,), qk - v)
        scale_ptr = None
        if fp8:
            allowed = _fp8_dtypes(torch, f)
            if kv_cache.dtype not in allowed:
                raise ValueError(f"kv_cache must be {' or '.join(map(str, allowed))} (the "
                                 f"kernel's fp8), got {kv_cache.dtype}")
            kv_shape, kv_st, kv_ptr, _ = _device_tensor_facts("kv_cache", kv_cache, None, (3,),
                                                              qk, align=8)
            if scale is None:
                raise ValueError("scale is required for an fp8 cache: a float32 device "
                                 "tensor of one element (stored = x / scale)")
            scale = as_tensor(scale, "scale")
            _check_device_tensor("scale", scale, torch.float32, None, None, align=4)
            if scale.numel() != 1:
                raise ValueError(f"scale must hold one element, got {scale.numel()}")
            scale_ptr = scale.data_ptr()
        else:
            kv_shape, kv_st, kv_ptr, _ = _device_tensor_facts("kv_cache", kv_cache, dtype, (3,),
                                                              qk)
        tokens, slots_ptr, slot_bits = _slot_tensor(
            "slot_mapping", slot_mapping, (("kv_c", c_shape), ("k_pe", p_shape)))
        if kv_shape[1] != page:
            raise ValueError(f"kv_cache pages hold {kv_shape[1]} keys, the kernel {page}")
        stream = _current_stream(stream, kv_cache)
        strides = _INT64x4(c_st[0], p_st[0], kv_st[0], kv_st[1])
        _check(_lib.mlagen_kv_cache_write_run(
            self._handle, c_ptr, p_ptr, kv_ptr, slots_ptr, slot_bits, scale_ptr, tokens,
            strides, stream))

    def reshape_and_cache(self, key, value, k_cache, v_cache, slot_mapping, k_scale=None,
                          v_scale=None, stream=None):
        """GQA KV-cache write (vLLM's reshape_and_cache_flash, NHD layout): for
        token t with slot = slot_mapping[t] >= 0 (-1 skips) and each kv head h,
        k_cache[slot // page, slot % page, h] = key[t, h] and v_cache[...] =
        value[t, h]. key, value [tokens, hkv, v] in the kernel's in dtype (any
        token/head strides that are multiples of 8: slices of a fused qkv
        projection work as they are); k_cache, v_cache [num_blocks, page, hkv,
        v] in its kv dtype, with strides (multiples of 8); slot_mapping int32
        or int64 [tokens], all on the device. A kernel with kv=fp8e4m3 stores
        fp8(key / k_scale) and fp8(value / v_scale) (round to nearest even,
        saturated): the caches are float8_e4m3fn (float8_e4m3fnuz on gfx942)
        or uint8, k_scale and v_scale float32 device tensors of one element.
        stream: an int handle, None = current."""
        import torch
        f = self.fields
        if f["op"] != "reshape_and_cache":
            raise ValueError(f"reshape_and_cache() needs a reshape_and_cache kernel, "
                             f"not {f['op']}")
        dtype = getattr(torch, _DTYPE_NAMES[f.get("in", f["kv"])])
        key, value, k_cache, v_cache = (as_tensor(t, n) for t, n in (
            (key, "key"), (value, "value"), (k_cache, "k_cache"), (v_cache, "v_cache")))
        slot_mapping = as_tensor(slot_mapping, "slot_mapping")
        scales, (k_ptr, v_ptr), (kc_ptr, vc_ptr), tokens, slots_ptr, slot_bits, strides = \
            _check_paged_kv_copy(f, dtype, (("key", key), ("value", value)), k_cache, v_cache,
                                 k_scale, v_scale, "stored = x / {}", "slot_mapping",
                                 slot_mapping)
        _check(_lib.mlagen_reshape_and_cache_run(
            self._handle, k_ptr, v_ptr, kc_ptr, vc_ptr, slots_ptr, slot_bits,
            scales[0], scales[1], tokens, strides, _current_stream(stream, k_cache)))

    def gather_cache(self, k_cache, v_cache, out_k, out_v, slots, k_scale=None,
                     v_scale=None, stream=None):
        """GQA KV-cache gather (vLLM's gather_and_maybe_dequant_cache, NHD
        layout): for flat token i with slot = slots[i] >= 0 and each kv head h,
        out_k[i, h] = k_cache[slot // page, slot % page, h] and out_v[i, h] =
        v_cache[...]; slot -1 writes zeros. k_cache, v_cache [num_blocks, page,
        hkv, v] in the kernel's kv dtype (strides multiples of 8); out_k, out_v
        [tokens, hkv, v] in its out dtype (any token/head strides that are
        multiples of 8); slots int32 (expand_page_indices' output) or int64
        [tokens], all on the device. A 16-bit cache is copied bit for bit; a
        kernel with kv=fp8e4m3 gives float(stored) * k_scale (v_scale for
        values), rounded to out: the caches are float8_e4m3fn (float8_e4m3fnuz
        on gfx942) or uint8, k_scale and v_scale float32 device tensors of one
        element. stream: an int handle, None = current."""
        import torch
        f = self.fields
        if f["op"] != "gather_cache":
            raise ValueError(f"gather_cache() needs a gather_cache kernel, not {f['op']}")
        dtype = getattr(torch, _DTYPE_NAMES[f.get("out", f["kv"])])
        k_cache, v_cache, out_k, out_v = (as_tensor(t, n) for t, n in (
            (k_cache, "k_cache"), (v_cache, "v_cache"), (out_k, "out_k"), (out_v, "out_v")))
        slots = as_tensor(slots, "slots")
        scales, (ok_ptr, ov_ptr), (kc_ptr, vc_ptr), tokens, slots_ptr, slot_bits, strides = \
            _check_paged_kv_copy(f, dtype, (("out_k", out_k), ("out_v", out_v)), k_cache,
                                 v_cache, k_scale, v_scale, "value = stored * {}", "slots",
                                 slots)
        _check(_lib.mlagen_gather_cache_run(
            self._handle, kc_ptr, vc_ptr, ok_ptr, ov_ptr, slots_ptr, slot_bits,
            scales[0], scales[1], tokens, strides, _current_stream(stream, k_cache)))

    def merge_attn_states(self, prefix_out, prefix_lse, suffix_out, suffix_lse, out,
                          out_lse=None, stream=None):
        """vLLM's merge_attn_states: out = the LSE-weighted merge of two partial
        attention results over disjoint key sets. prefix_out, suffix_out, out
        [tokens, heads, head_dim] (or out [tokens, heads*head_dim]) in the
        kernel's dtype, any token/head strides that are multiples of 8;
        prefix_lse, suffix_lse, out_lse [heads, >= tokens] fp32 with a unit
        token stride (mlagen prefill's LSE layout). An infinite LSE marks an
        empty part; both empty give zeros and -inf. stream: an int handle,
        None = current."""
        import torch
        f = self.fields
        if f["op"] != "merge_attn_states":
            raise ValueError(f"merge_attn_states() needs a merge_attn_states kernel, "
                             f"not {f['op']}")
        heads, dim = int(f["hq"]), int(f["v"])
        dtype = getattr(torch, _DTYPE_NAMES[f["out"]])
        prefix_out, suffix_out, out = (as_tensor(t, n) for t, n in (
            (prefix_out, "prefix_out"), (suffix_out, "suffix_out"), (out, "out")))
        if out.dim() == 2:
            out = out.view(out.shape[0], heads, dim)
        elif out.dim() == 0:  # no token count to read: say what is wrong with it
            _check_device_tensor("out", out, dtype, 3, dim)
        tokens = out.shape[0]
        rows, devices = [], []  # each tensor's strides and pointer, read once
        for name, t in (("prefix_out", prefix_out), ("suffix_out", suffix_out), ("out", out)):
            shape, st, ptr, dev = _device_tensor_facts(name, t, dtype, (3,), dim)
            if shape != (tokens, heads, dim):
                raise ValueError(f"{name} must be [tokens={tokens}, heads={heads}, "
                                 f"head_dim={dim}], got {tuple(shape)}")
            rows.append((st, ptr))
            devices.append(dev)
        lses = []  # (head stride, pointer) of each LSE; None for no out_lse
        for name, t in (("prefix_lse", prefix_lse), ("suffix_lse", suffix_lse),
                        ("out_lse", out_lse)):
            if t is None:
                if name != "out_lse":
                    raise ValueError(f"{name} is required")
                lses.append((0, None))
                continue
            t = as_tensor(t, name)
            shape, st, ptr, dev = _device_tensor_facts(name, t, torch.float32, (2,), align=4)
            if shape[0] != heads or shape[1] < tokens or (shape[1] > 1 and st[1] != 1):
                raise ValueError(f"{name} must be fp32 [heads={heads}, >= {tokens}] with a "
                                 f"unit token stride, got {tuple(shape)} {st}")
            lses.append((st[0] if shape[0] > 1 else shape[1], ptr))
            devices.append(dev)
        if out_lse is not None and f.get("lse") == "0":
            raise ValueError("out_lse given, but the kernel's signature says lse=0")
        _same_device(devices)
        (p_st, p_ptr), (s_st, s_ptr), (o_st, o_ptr) = rows
        strides = _INT64x9(p_st[0], p_st[1], s_st[0], s_st[1], o_st[0], o_st[1], lses[0][0],
                           lses[1][0], lses[2][0])
        _check(_lib.mlagen_merge_attn_states_run(
            self._handle, p_ptr, lses[0][1], s_ptr, lses[1][1], o_ptr, lses[2][1], tokens,
            heads, dim, strides, _current_stream(stream, out)))

    def prefill(self, q, k, v, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                lse=None, softmax_scale=0.0, alibi_slopes=None, stream=None):
        """q [total_q, hq, dqk], k [total_k, hkv, dqk], v [total_k, hkv, dv],
        out [total_q, hq*dv] or [total_q, hq, dv], lse [hq, total_q] fp32
        (any head stride, unit token stride), cu_seqlens int32 [batch+1] on the
        device; torch tensors or DLPack objects. max_seqlen_q must bound the
        longest query (it sizes the grid; it is not checked against the device
        cu_seqlens). alibi_slopes: fp32 [hq] on the device, required by an
        alibi=1 kernel, refused by any other (added to the soft-capped logits
        as -slope * |i + seqlen_k - seqlen_q - j|, as flash-attn's
        alibi_slopes). k.shape[0] goes to the runtime as total_k: the sm_90a
        kernel's bulk copies read whole tiles but never past it.
        stream: an int handle, None = current. ValueError /
        TypeError name the argument that is wrong before anything launches."""
        import torch
        if self.fields["op"] != "prefill":
            raise ValueError(f"prefill() needs a prefill kernel, not {self.fields['op']}")
        # What the checks compare against, worked out once per kernel; each
        # tensor's facts are read once (a torch attribute costs 0.2-0.7 us).
        if self._prefill_rules is None:
            self._prefill_rules = self._make_prefill_rules(torch)
        (q_dtype, kv_dtype, out_dtype), hq, hkv, dqk, dv, with_lse, alibi = self._prefill_rules
        q, k, v, out = (as_tensor(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v"),
                                                     (out, "out")))
        cu_seqlens_q = as_tensor(cu_seqlens_q, "cu_seqlens_q")
        cu_seqlens_k = as_tensor(cu_seqlens_k, "cu_seqlens_k")
        q_shape, q_st, q_ptr, q_dev = _device_tensor_facts("q", q, q_dtype, (3,), dqk)
        k_shape, k_st, k_ptr, k_dev = _device_tensor_facts("k", k, kv_dtype, (3,), dqk)
        v_shape, v_st, v_ptr, v_dev = _device_tensor_facts("v", v, kv_dtype, (3,), dv)
        out_3d = out.dim() == 3
        o_shape, o_st, o_ptr, o_dev = _device_tensor_facts(
            "out", out, out_dtype, (2, 3), dv if out_3d else hq * dv)
        if q_shape[1] != hq:
            raise ValueError(f"q has {q_shape[1]} heads, the kernel {hq}")
        if k_shape[1] != hkv or v_shape[1] != hkv:
            raise ValueError(f"k and v must have {hkv} heads (the kernel's hkv), got "
                             f"{k_shape[1]} and {v_shape[1]}")
        if k_shape[0] != v_shape[0]:
            raise ValueError(f"k and v hold {k_shape[0]} and {v_shape[0]} tokens")
        if o_shape[0] != q_shape[0] or (out_3d and o_shape[1] != hq):
            raise ValueError(f"out {tuple(o_shape)} does not match q {tuple(q_shape)}")
        devices = [q_dev, k_dev, v_dev, o_dev]
        cu = []
        for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
            shape, st, ptr, dev = _device_tensor_facts(name, t, torch.int32, (1,), align=4)
            if shape[0] < 2 or st[0] != 1:
                raise ValueError(f"{name} must be a contiguous int32 [batch + 1] device "
                                 f"tensor, got shape {tuple(shape)}")
            devices.append(dev)
            cu.append((shape[0], ptr))
        if cu[0][0] != cu[1][0]:
            raise ValueError(f"cu_seqlens_q and cu_seqlens_k hold {cu[0][0]} "
                             f"and {cu[1][0]} entries")
        lse_ptr, lse_head = None, 0
        if lse is not None:
            lse = as_tensor(lse, "lse")
            shape, st, lse_ptr, dev = _device_tensor_facts("lse", lse, torch.float32, (2,),
                                                           q_shape[0], align=4)
            if shape[0] != hq:
                raise ValueError(f"lse must be [hq={hq}, total_q], got {tuple(shape)}")
            devices.append(dev)
            lse_head = st[0]
            if not with_lse:
                raise ValueError("lse given, but the kernel's signature says lse=0")
        alibi_ptr = None
        if alibi:
            if alibi_slopes is None:
                raise ValueError("alibi_slopes is required: the kernel's signature says alibi=1")
            alibi_slopes = as_tensor(alibi_slopes, "alibi_slopes")
            # The C API cannot see the array's length: a short one reads past its end.
            shape, st, alibi_ptr, dev = _device_tensor_facts("alibi_slopes", alibi_slopes,
                                                             torch.float32, (1,), align=4)
            if shape[0] != hq or (hq > 1 and st[0] != 1):
                raise ValueError(f"alibi_slopes must be a contiguous [hq={hq}] tensor, got "
                                 f"shape {tuple(shape)} strides {st}")
            devices.append(dev)
        elif alibi_slopes is not None:
            raise ValueError("alibi_slopes given, but the kernel's signature says alibi=0 "
                             "(build it with alibi=1)")
        _same_device(devices)
        if int(max_seqlen_q) < 0:
            raise ValueError(f"max_seqlen_q must be >= 0, got {max_seqlen_q}")
        stream = _current_stream(stream, q)
        strides = _INT64x9(q_st[0], q_st[1], k_st[0], k_st[1], v_st[0], v_st[1], o_st[0],
                           o_st[1] if out_3d else 0, lse_head)  # out head 0: head_dim_v
        _check(_lib.mlagen_prefill_run(
            self._handle, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, cu[0][1], cu[1][1],
            cu[0][0] - 1, int(max_seqlen_q), k_shape[0], strides, float(softmax_scale),
            alibi_ptr, stream))


class CompiledKernel:
    """A code object from Runtime.compile(): binary (cubin for sm_*, hsaco for
    gfx*), the canonical signature, its fields, arch, format and the kernel
    entry points read from the ELF symbol table."""

    def __init__(self, signature, binary):
        self.signature = signature
        self.fields = _signature_fields(signature)
        self.arch = self.fields["arch"]
        self.format = "hsaco" if self.arch.startswith("gfx") else "cubin"
        self.binary = binary
        self.entries = _elf_functions(binary)

    def metadata(self):
        return dict(signature=self.signature, arch=self.arch, format=self.format,
                    size=len(self.binary), entries=self.entries)

    def __repr__(self):
        return (f"CompiledKernel({self.format}, {len(self.binary)} bytes, "
                f"entries={self.entries}, {self.signature!r})")


def _elf_functions(binary):
    """Global function symbols of an ELF64 code object; [] if it is not one."""
    import struct
    if len(binary) < 64 or binary[:4] != b"\x7fELF" or binary[4] != 2:
        return []
    shoff, = struct.unpack_from("<Q", binary, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", binary, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", binary, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9] or 24):
            st_name, st_info = struct.unpack_from("<IB", binary, off)
            if st_info & 0xF == 2 and st_info >> 4 in (1, 2):  # FUNC, GLOBAL/WEAK
                start = strtab[4] + st_name
                name = binary[start:binary.index(b"\0", start)].decode()
                if not name.startswith(("$", "__")):  # compiler helpers
                    names.append(name)
    return sorted(names)


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
        # Work items of the last update's plan: outside graph capture an MLA
        # decode launches only their blocks. -1 before any update.
        self.num_work = -1
        # Partial slots of the last update's plan that the reduce merges
        # (requests of more than two chunks); 0 lets a decode skip its reduce
        # (outside graph capture). -1 before any update.
        self.slots = -1
        # Requests of the last update's plan merged inside clusters; 0 lets a
        # decode launch without clusters (outside graph capture).
        self.groups = -1
        # Checked decode's flags (zeroed; they never move, so a checked decode
        # can be captured in a CUDA graph too).
        self.error_flags = torch.zeros(_DECODE_ERROR_FLAG_INTS, dtype=torch.int32, device=device)

    def check(self, clear=True):
        """After a checked kernel.decode() and a sync by the caller (this
        copies the flags to the host, which waits only for work already
        queued): raises mlagen.Error naming the first bad request, if any.
        clear: zero the flags afterwards so the next step starts clean."""
        host = self.error_flags.cpu().contiguous()
        try:
            _check(_lib.mlagen_decode_error_check(host.data_ptr()))
        finally:
            if clear and int(host[0]) != 0:
                self.error_flags.zero_()

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
        self.slots = int(staging[1])
        self.groups = int(staging[3])
        return self

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.mlagen_decode_planner_destroy(self._handle)
            self._handle = None


_ENV_LOCK = __import__("threading").Lock()


class Runtime:
    """cache_dir: None = $MLAGEN_CACHE_DIR, ... (see the C API). flags:
    NO_DISK_CACHE | BACKEND_CUDA | BACKEND_HIP | COMPILE_ONLY | NO_GENERATOR.
    bundle_paths: AOT bundle directories (written by `mlagen`) consulted before
    the disk cache, ahead of those in $MLAGEN_BUNDLE_PATH. The C API reads
    bundles only from that variable, so the runtime is created with it set to
    bundle_paths + its old value and restored afterwards (under a lock against
    other Runtime()s; another thread reading the environment then sees it)."""

    def __init__(self, cache_dir=None, flags=0, bundle_paths=None):
        handle = ctypes.c_void_p()
        if bundle_paths is not None and isinstance(bundle_paths, (str, os.PathLike)):
            bundle_paths = [bundle_paths]
        with _ENV_LOCK:
            saved = os.environ.get("MLAGEN_BUNDLE_PATH")
            if bundle_paths:
                for path in bundle_paths:
                    if not Path(path, "manifest.json").is_file():
                        raise FileNotFoundError(f"bundle {path} has no manifest.json")
                os.environ["MLAGEN_BUNDLE_PATH"] = ":".join(
                    [str(p) for p in bundle_paths] + ([saved] if saved else []))
            try:
                _check(_lib.mlagen_runtime_create(
                    os.fspath(cache_dir).encode() if cache_dir else None, flags,
                    ctypes.byref(handle)))
            finally:
                if bundle_paths:
                    if saved is None:
                        del os.environ["MLAGEN_BUNDLE_PATH"]
                    else:
                        os.environ["MLAGEN_BUNDLE_PATH"] = saved
        self._handle = handle
        self.bundle_paths = list(bundle_paths or [])

    def compile(self, signature: str) -> "CompiledKernel":
        """The code object for `signature` (any arch a compiler here targets;
        no device needed with flags=COMPILE_ONLY), through this runtime's
        caches and bundles."""
        size = ctypes.c_size_t()
        _check(_lib.mlagen_compile(self._handle, signature.encode(), None, 0,
                                   ctypes.byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        _check(_lib.mlagen_compile(self._handle, signature.encode(), buf, size.value,
                                   ctypes.byref(size)))
        return CompiledKernel(canonicalize(signature), buf.raw[:size.value])

    @property
    def backend(self) -> str:
        return _lib.mlagen_runtime_backend(self._handle).decode()

    def kernel(self, signature: str) -> Kernel:
        handle = ctypes.c_void_p()
        _check(_lib.mlagen_get_kernel(self._handle, signature.encode(), ctypes.byref(handle)))
        return Kernel(self, handle, signature)

    def kernels(self, signatures, jobs=0) -> list:
        """A Kernel for each signature, fetched up to `jobs` at once (0: one
        per core): cold, the set takes about its slowest compile instead of
        the sum (an engine's start-up). Every signature is tried, so those
        that compile stay cached when another fails; the error names the
        first that failed."""
        signatures = list(signatures)
        texts = (ctypes.c_char_p * len(signatures))(*[s.encode() for s in signatures])
        handles = (ctypes.c_void_p * len(signatures))()
        _check(_lib.mlagen_get_kernels(self._handle, texts, len(signatures), jobs, handles))
        return [Kernel(self, ctypes.c_void_p(h), s) for h, s in zip(handles, signatures)]

    def kernels_async(self, signatures, jobs=0):
        """kernels(signatures, jobs) on a thread of its own: returns at once
        with a concurrent.futures.Future of the list (or of the error). An
        engine starts it as it builds its layers and takes the result at the
        first step, so a cold compile runs while the weights load (the C
        calls release the GIL)."""
        import concurrent.futures
        import threading
        signatures = list(signatures)
        future = concurrent.futures.Future()

        def fetch():
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self.kernels(signatures, jobs))
            except BaseException as error:  # handed to whoever waits
                future.set_exception(error)
        # Not a daemon: a process that exits mid-compile waits for it rather
        # than tearing the runtime down under the compiling threads.
        threading.Thread(target=fetch, name="mlagen-kernels").start()
        return future

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.mlagen_runtime_destroy(self._handle)
            self._handle = None


def default_arch(device=None) -> str:
    """The arch of the kernels mlagen runs by default on a torch GPU (the
    current one when None): "sm_90a" on compute capability 9.0, "sm_80" (the
    portable kernels, compiled for the device's own SASS from 9.0 on) on
    other NVIDIA GPUs, the gfx name on ROCm. $MLAGEN_TEST_ARCH overrides it,
    so that tests and benchmarks can run the portable kernels on an H100."""
    override = os.environ.get("MLAGEN_TEST_ARCH")
    if override:
        return override
    import torch
    props = torch.cuda.get_device_properties(
        torch.cuda.current_device() if device is None else device)
    if getattr(torch.version, "hip", None):
        return props.gcnArchName.split(":")[0]
    return "sm_90a" if (props.major, props.minor) == (9, 0) else "sm_80"


def compile(signature: str, cache_dir=None, flags=0, bundle_paths=None) -> CompiledKernel:
    """Compile-only: the code object and metadata for `signature` without a GPU
    (a fresh COMPILE_ONLY runtime; keep a Runtime to compile many)."""
    return Runtime(cache_dir, flags | COMPILE_ONLY, bundle_paths).compile(signature)


def status_name(code: int) -> str:
    return _lib.mlagen_status_name(int(code)).decode()
