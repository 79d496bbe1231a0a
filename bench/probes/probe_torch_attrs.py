# Median host cost of single torch tensor attribute reads and of the binding's
# helpers (us), behind the Python binding's check order (python-host-h100.md).
import time, statistics, torch, ctypes
import mlagen
q = torch.randn(256, 16, 192, device="cuda", dtype=torch.bfloat16)
cu = torch.tensor([0, 128, 256], dtype=torch.int32, device="cuda")
def t(fn, n=2000):
    xs = []
    for _ in range(n):
        a = time.perf_counter(); fn(); xs.append(time.perf_counter() - a)
    return statistics.median(xs) * 1e6
ops = {
 "empty": lambda: None,
 "q.device": lambda: q.device,
 "q.device.type": lambda: q.device.type,
 "q.dtype": lambda: q.dtype,
 "q.dim()": lambda: q.dim(),
 "q.shape[-1]": lambda: q.shape[-1],
 "q.shape": lambda: q.shape,
 "q.numel()": lambda: q.numel(),
 "q.stride(-1)": lambda: q.stride(-1),
 "q.stride()": lambda: q.stride(),
 "q.data_ptr()": lambda: q.data_ptr(),
 "q.is_contiguous()": lambda: q.is_contiguous(),
 "q.is_cuda": lambda: q.is_cuda,
 "q.element_size()": lambda: q.element_size(),
 "as_tensor": lambda: mlagen.as_tensor(q, "q"),
 "check_device_tensor": lambda: mlagen._check_device_tensor("q", q, torch.bfloat16, 3, 192),
 "devices set of 6": lambda: {x.device for x in (q, q, q, q, cu, cu)},
 "current_stream": lambda: mlagen._current_stream(None, q),
 "int64*9": lambda: (ctypes.c_int64 * 9)(1, 2, 3, 4, 5, 6, 7, 8, 9),
 "isinstance": lambda: isinstance(q, torch.Tensor),
}
print(" | ".join(f"{k} {t(f):.2f}" for k, f in ops.items()))
