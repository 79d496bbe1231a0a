/*===- mlagen-c/Runtime.h - C API of the mlagen runtime ------------*- C -*-===*\
|*                                                                            *|
|* For FFI hosts (Python ctypes/cffi, Rust, ...). Signatures travel as their  *|
|* canonical text ("prefill qk=192 v=128 hq=16 hkv=16 mask=causal window=-1,-1 *|
|* softcap=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen tile_q=0            *|
|* arch=sm_90a"; fields in any order, each once), so no struct is mirrored.   *|
|*                                                                            *|
|* Every function returns a status code equal to mlagen::StatusCode; on      *|
|* failure mlagen_last_error() describes it. Thread safety is that of the    *|
|* C++ Runtime: any thread may call anything, except destroying a runtime    *|
|* that is in use. A kernel handle belongs to its runtime and is valid until *|
|* mlagen_runtime_destroy.                                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef MLAGEN_C_RUNTIME_H
#define MLAGEN_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLAGEN_C_EXPORT __attribute__((visibility("default")))

typedef struct mlagen_runtime mlagen_runtime;
typedef struct mlagen_kernel mlagen_kernel;

enum mlagen_status {
  MLAGEN_OK = 0,
  MLAGEN_INVALID_SIGNATURE = 1,
  MLAGEN_INVALID_ARGUMENT = 2,
  MLAGEN_UNSUPPORTED = 3,
  MLAGEN_NO_BACKEND = 4,
  MLAGEN_COMPILE_ERROR = 5,
  MLAGEN_DRIVER_ERROR = 6,
  MLAGEN_CACHE_ERROR = 7,
  MLAGEN_GENERATOR_ERROR = 8,
  MLAGEN_INTERNAL = 9,
};

/* Flags of mlagen_runtime_create; 0 = auto backend, disk cache on. */
#define MLAGEN_RUNTIME_NO_DISK_CACHE 0x1u
#define MLAGEN_RUNTIME_BACKEND_CUDA 0x2u /* fail unless CUDA opens */
#define MLAGEN_RUNTIME_BACKEND_HIP 0x4u  /* fail unless HIP opens */
#define MLAGEN_RUNTIME_COMPILE_ONLY 0x8u /* touch no GPU driver */
#define MLAGEN_RUNTIME_NO_GENERATOR 0x10u /* prebuilt/cached kernels only */

/* The message of this thread's last failed call; "" after a success. */
MLAGEN_C_EXPORT const char *mlagen_last_error(void);

/* cache_dir: NULL = $MLAGEN_CACHE_DIR, $XDG_CACHE_HOME/mlagen or
 * ~/.cache/mlagen. Uses the generator installed by the library that bundles
 * the compiler (see mlagen/Runtime/DefaultGenerator.h), if any. */
MLAGEN_C_EXPORT int mlagen_runtime_create(const char *cache_dir,
                                          unsigned flags,
                                          mlagen_runtime **out);
MLAGEN_C_EXPORT void mlagen_runtime_destroy(mlagen_runtime *runtime);
/* "cuda device 0: NVIDIA H100 80GB HBM3 (sm_90a)" or "compile-only: ..." */
MLAGEN_C_EXPORT const char *mlagen_runtime_backend(
    const mlagen_runtime *runtime);

/* Parses and validates `signature` and writes its canonical text, NUL
 * included, to `canonical` (at most `size` bytes; INVALID_ARGUMENT if it
 * does not fit). `canonical` may be NULL to validate only. */
MLAGEN_C_EXPORT int mlagen_signature_canonicalize(const char *signature,
                                                  char *canonical,
                                                  size_t size);

/* A kernel for `signature` loaded on the runtime's device. Parses the text
 * each call: keep the handle rather than calling this per launch. */
MLAGEN_C_EXPORT int mlagen_get_kernel(mlagen_runtime *runtime,
                                      const char *signature,
                                      mlagen_kernel **out);

/* One prefill launch (templates/CONTRACT.md). Device pointers; lse may be
 * NULL. strides: NULL or 9 element strides in the order q_token, q_head,
 * k_token, k_head, v_token, v_head, out_token, out_head, lse_head; 0 means
 * contiguous, except lse_head, which is required with lse (total_q).
 * softmax_scale 0 means 1/sqrt(head_dim_qk). stream: cudaStream_t or
 * hipStream_t, NULL for the default stream. Does not wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_prefill_run(
    const mlagen_kernel *kernel, const void *q, const void *k, const void *v,
    void *out, float *lse, const int *cu_seqlens_q, const int *cu_seqlens_k,
    int batch, int max_seqlen_q, const int64_t *strides, float softmax_scale,
    void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAGEN_C_RUNTIME_H */
