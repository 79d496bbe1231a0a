/*===- mlagen-c/Runtime.h - C API of the mlagen runtime ------------*- C -*-===*\
|*                                                                            *|
|* For FFI hosts (Python ctypes/cffi, Rust, ...). Signatures travel as their  *|
|* canonical text ("prefill qk=192 v=128 hq=16 hkv=16 mask=causal window=-1,-1 *|
|* softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen tile_q=0    *|
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
/* "InvalidArgument" for MLAGEN_INVALID_ARGUMENT, ...; "Unknown" otherwise. */
MLAGEN_C_EXPORT const char *mlagen_status_name(int code);

/* cache_dir: NULL = $MLAGEN_CACHE_DIR, $XDG_CACHE_HOME/mlagen or
 * ~/.cache/mlagen. Uses the generator installed by the library that bundles
 * the compiler (see mlagen/Runtime/DefaultGenerator.h), if any. AOT bundles
 * named by $MLAGEN_BUNDLE_PATH (colon-separated directories written by
 * `mlagen`) are consulted before the disk cache; $MLAGEN_LOG=info|debug
 * reports cache and bundle decisions on stderr. */
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

/* The code object (cubin or hsaco) for `signature`, for any arch a compiler
 * here can target: no device needed (AOT tools, checks). Writes its size to
 * *binary_size (may be NULL) and, when `binary` is not NULL, copies it there
 * (INVALID_ARGUMENT if `size` is smaller). Uses and fills the runtime's
 * caches and bundles ($MLAGEN_BUNDLE_PATH). */
MLAGEN_C_EXPORT int mlagen_compile(mlagen_runtime *runtime,
                                   const char *signature, void *binary,
                                   size_t size, size_t *binary_size);

/* A kernel for `signature` loaded on the runtime's device. Parses the text
 * each call: keep the handle rather than calling this per launch. */
MLAGEN_C_EXPORT int mlagen_get_kernel(mlagen_runtime *runtime,
                                      const char *signature,
                                      mlagen_kernel **out);

/* mlagen_get_kernel for each of `count` signatures, up to `jobs` at once
 * (<= 0: one per core), so that a cold start waits for its slowest compile
 * rather than the sum. out[i] receives signature i's kernel, or NULL where
 * that one failed. A signature that does not parse fails the call before
 * anything is compiled; otherwise every one is tried (the others stay
 * cached) and the first failure in order is returned, naming its index. */
MLAGEN_C_EXPORT int mlagen_get_kernels(mlagen_runtime *runtime,
                                       const char *const *signatures,
                                       size_t count, int jobs,
                                       mlagen_kernel **out);

/* One prefill launch (templates/CONTRACT.md). Device pointers; lse may be
 * NULL. total_k: rows of k and v (k.shape[0]), or 0 if unknown (the sm_90a
 * kernel then copies K and V with cp.async instead of TMA). strides: NULL or 9 element strides in the order q_token, q_head,
 * k_token, k_head, v_token, v_head, out_token, out_head, lse_head; 0 means
 * contiguous, except lse_head, which is required with lse (total_q).
 * softmax_scale 0 means 1/sqrt(head_dim_qk). alibi_slopes: [num_q_heads]
 * fp32 device array, required by an alibi=1 kernel and refused (non-NULL) by
 * any other; its length cannot be checked here. stream: cudaStream_t or
 * hipStream_t, NULL for the default stream. Does not wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_prefill_run(
    const mlagen_kernel *kernel, const void *q, const void *k, const void *v,
    void *out, float *lse, const int *cu_seqlens_q, const int *cu_seqlens_k,
    int batch, int max_seqlen_q, int64_t total_k, const int64_t *strides,
    float softmax_scale, const float *alibi_slopes, void *stream);

/* One merge_attn_states launch (vLLM semantics): out = the LSE-weighted
 * merge of two partial attention results; an infinite LSE is an empty part,
 * both empty give zeros and -inf. Device pointers: prefix_out, suffix_out,
 * out [num_tokens, num_heads, head_dim] of the kernel's type; prefix_lse,
 * suffix_lse, out_lse [num_heads, *] fp32 (out_lse may be NULL). num_heads
 * and head_dim must equal the kernel's. strides: NULL or 9 element strides
 * prefix_token, prefix_head, suffix_token, suffix_head, out_token, out_head,
 * prefix_lse_head, suffix_lse_head, out_lse_head; 0 means contiguous
 * (num_tokens for the LSE head strides). Does not wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_merge_attn_states_run(
    const mlagen_kernel *kernel, const void *prefix_out,
    const float *prefix_lse, const void *suffix_out, const float *suffix_lse,
    void *out, float *out_lse, int num_tokens, int num_heads, int head_dim,
    const int64_t *strides, void *stream);

/* Page-index expansion: for request b and token i < cu_seqlens[b + 1] -
 * cu_seqlens[b], slots[cu_seqlens[b] + i] = block_table[b * stride + p /
 * page] * page + p % page with p = seq_starts[b] + i (seq_starts may be
 * NULL: 0). Device int32 pointers; page is the kernel's. max_seqlen bounds
 * every request's token count (it sizes the grid). Does not wait for the
 * GPU. */
MLAGEN_C_EXPORT int mlagen_expand_page_indices_run(
    const mlagen_kernel *kernel, const int32_t *block_table,
    int block_table_stride, const int32_t *cu_seqlens,
    const int32_t *seq_starts, int32_t *slots, int batch, int max_seqlen,
    void *stream);

/* MLA KV-cache write: for token t with slot = slot_mapping[t] >= 0 (-1
 * skips), cache row (slot / page, slot % page) = kv_c[t] ++ k_pe[t]; an fp8
 * cache (kv=fp8e4m3) stores fp8(x / *scale), rounded to nearest even and
 * saturated at the largest finite value (vLLM's concat_and_cache_mla).
 * Device pointers: kv_c [num_tokens, v], k_pe [num_tokens, qk - v] of the
 * kernel's in type, kv_cache [num_blocks, page, qk] of its kv type,
 * slot_mapping int32 or int64 (slot_mapping_bits 32 or 64), scale fp32 [1]
 * (fp8 cache; NULL otherwise). strides: NULL or 4 element strides
 * kv_c_token, k_pe_token, cache_block, cache_token; 0 means contiguous.
 * Does not wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_kv_cache_write_run(
    const mlagen_kernel *kernel, const void *kv_c, const void *k_pe,
    void *kv_cache, const void *slot_mapping, int slot_mapping_bits,
    const float *scale, int num_tokens, const int64_t *strides, void *stream);

/* GQA KV-cache write (vLLM's reshape_and_cache_flash, NHD layout): for
 * token t with slot = slot_mapping[t] >= 0 (-1 skips) and each kv head h,
 * k_cache[slot / page][slot % page][h] = key[t][h] and v_cache[...][h] =
 * value[t][h]; an fp8 cache (kv=fp8e4m3) stores fp8(key / *k_scale) and
 * fp8(value / *v_scale), rounded to nearest even and saturated at the
 * largest finite value. Device pointers: key, value [num_tokens, hkv, v] of
 * the kernel's in type; k_cache, v_cache [num_blocks, page, hkv, v] of its
 * kv type; slot_mapping int32 or int64 (slot_mapping_bits 32 or 64);
 * k_scale, v_scale fp32 [1] (fp8 cache; NULL otherwise). strides: NULL or
 * 10 element strides (a cache's in its own type), each a multiple of 8:
 * key_token, key_head, value_token, value_head, k_cache_block,
 * k_cache_token, k_cache_head, v_cache_block, v_cache_token, v_cache_head;
 * 0 means contiguous given the stride inside it (head = v, token = hkv *
 * head, block = page * token). Does not wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_reshape_and_cache_run(
    const mlagen_kernel *kernel, const void *key, const void *value,
    void *k_cache, void *v_cache, const void *slot_mapping,
    int slot_mapping_bits, const float *k_scale, const float *v_scale,
    int num_tokens, const int64_t *strides, void *stream);

/* GQA KV-cache gather (vLLM's gather_and_maybe_dequant_cache, NHD
 * layout): for flat token i with slot = slots[i] >= 0 and each kv head h,
 * out_k[i][h] = k_cache[slot / page][slot % page][h] and out_v[i][h] =
 * v_cache[...][h]; slot -1 writes zeros. A 16-bit cache is copied bit for
 * bit; an fp8 cache (kv=fp8e4m3) gives float(stored) * *k_scale (*v_scale
 * for values) rounded to nearest even in the kernel's out type. Device
 * pointers: k_cache, v_cache [num_blocks, page, hkv, v] of the kv type;
 * out_k, out_v [num_tokens, hkv, v] of the out type; slots int32 or int64
 * (slots_bits 32 or 64); k_scale, v_scale fp32 [1] (fp8 cache; NULL
 * otherwise). strides: NULL or 10 element strides (a cache's in its own
 * type), each a multiple of 8: out_k_token, out_k_head, out_v_token,
 * out_v_head, k_cache_block, k_cache_token, k_cache_head, v_cache_block,
 * v_cache_token, v_cache_head; 0 means contiguous given the stride inside
 * it (head = v, token = hkv * head, block = page * token). Does not wait
 * for the GPU. */
MLAGEN_C_EXPORT int mlagen_gather_cache_run(
    const mlagen_kernel *kernel, const void *k_cache, const void *v_cache,
    void *out_k, void *out_v, const void *slots, int slots_bits,
    const float *k_scale, const float *v_scale, int num_tokens,
    const int64_t *strides, void *stream);

/* --- Absorbed MLA decode (templates/DECODE_CONTRACT.md) ------------------
 * A planner, made once per kernel and device, says how large the fixed
 * device buffers must be; before each step it plans on the host into an
 * int32 array that the host copies to the device plan (one async copy),
 * and mlagen_decode_run launches from device memory only, so the launch can
 * be captured in a CUDA/HIP graph. See mlagen/Runtime/DecodePlan.h. */
typedef struct mlagen_decode_planner mlagen_decode_planner;

/* Indices of mlagen_decode_planner_sizes' output, in elements. */
enum mlagen_decode_size {
  MLAGEN_DECODE_PLAN_INTS = 0,          /* int32: a plan, host and device */
  MLAGEN_DECODE_PARTIAL_OUT_FLOATS = 1, /* fp32: partial_out */
  MLAGEN_DECODE_PARTIAL_LSE_FLOATS = 2, /* fp32: partial_lse */
  MLAGEN_DECODE_WORK_CAPACITY = 3,      /* work items (grid.x) */
  MLAGEN_DECODE_SLOT_CAPACITY = 4,      /* partial slots */
  MLAGEN_DECODE_NUM_SIZES = 5,
};

/* A planner for the decode kernel `kernel`, for steps of up to max_batch
 * requests on a device of num_sms SMs (CUs). max_seq_len: keys of the
 * longest request; required (> 0) for a batch-invariant kernel, else 0
 * (unbounded) or a bound. Allocates no device memory. Valid until destroyed
 * or until the kernel's runtime is. */
MLAGEN_C_EXPORT int mlagen_decode_planner_create(
    const mlagen_kernel *kernel, int max_batch, int num_sms,
    int64_t max_seq_len, mlagen_decode_planner **out);
MLAGEN_C_EXPORT void mlagen_decode_planner_destroy(
    mlagen_decode_planner *planner);

/* Writes the first `count` (<= MLAGEN_DECODE_NUM_SIZES) sizes. Allocate once:
 * a device plan of PLAN_INTS int32 (16-byte aligned), a host plan of as
 * many (pinned, for an async copy), partial_out and partial_lse (fp32). */
MLAGEN_C_EXPORT int mlagen_decode_planner_sizes(
    const mlagen_decode_planner *planner, int64_t *sizes, size_t count);

/* Plans one step on the host: seq_lens[batch] (host int32: keys of each
 * request, its q_len new tokens included; 0 <= batch <= max_batch) into
 * plan (host, plan_ints >= PLAN_INTS). *used_ints (may be NULL): the prefix
 * the kernels read; copy at least that many int32 to the device plan.
 * plan[0] counts its work items: pass it as plan_work; plan[1] the partial
 * slots its reduce merges (requests of more than two chunks; the decode
 * grid merges pairs): pass it as plan_slots;
 * plan[3] its requests merged inside clusters: pass it as plan_groups. The
 * decode kernel counts arrivals in the device plan and leaves it as copied. */
MLAGEN_C_EXPORT int mlagen_decode_plan(const mlagen_decode_planner *planner,
                                       const int32_t *seq_lens, int batch,
                                       int32_t *plan, size_t plan_ints,
                                       int64_t *used_ints);

/* One decode step on `stream`: mlagen_decode, then mlagen_decode_reduce.
 * Device pointers: q [batch, q_len, num_heads, qk], kv_cache [num_blocks,
 * page_size, qk], out [batch, q_len, num_heads, v], lse [batch, q_len,
 * num_heads] fp32 contiguous or NULL, block_table [batch,
 * block_table_stride] int32 page ids, seq_lens [batch] int32, device_plan
 * (the copy of a plan), partial_out and partial_lse. q_len and num_heads
 * must equal the kernel's. strides: NULL or 8 element strides q_batch,
 * q_token, q_head, out_batch, out_token, out_head, kv_block, kv_token; 0
 * means contiguous. softmax_scale is required (DeepSeek-V3: 1/sqrt(192)).
 * q_scale: fp8 q's per-tensor scale (dequantised q = q_scale * stored;
 * finite, > 0); 16-bit q ignores it (pass 1). kv_scale: an fp8 cache's
 * per-tensor scale (dequantised = kv_scale * stored; finite, > 0); 16-bit
 * caches ignore it (pass 1). The plan's counts, where known (-1: unknown),
 * let a step launch less, unless the stream is being captured into a graph,
 * whose replays may meet other plans: plan_work (plan[0] of the host plan,
 * its work items) sizes the decode grid to them rather than to the most
 * items a plan of `batch` requests may hold, whose blocks past them only
 * exit (a value below plan[0] leaves work unrun); with plan_slots 0
 * (plan[1], the reduce's slots) the reduce, which would merge nothing, is
 * not launched; with plan_groups 0 (plan[3]) the decode launches without
 * thread-block clusters. Does not wait for the GPU. */
MLAGEN_C_EXPORT int
mlagen_decode_run(const mlagen_decode_planner *planner, const void *q,
                  const void *kv_cache, void *out, float *lse,
                  const int32_t *block_table, int block_table_stride,
                  const int32_t *seq_lens, const int32_t *device_plan,
                  float *partial_out, float *partial_lse, int batch, int q_len,
                  int num_heads, const int64_t *strides, float softmax_scale,
                  float q_scale, float kv_scale, int plan_work, int plan_slots,
                  int plan_groups, void *stream);

/* One paged GQA decode step (templates/PAGED_DECODE_CONTRACT.md) on
 * `stream`: mlagen_paged_decode, then mlagen_paged_decode_reduce. The
 * planner is made (mlagen_decode_planner_create) from the paged_decode
 * kernel; plans, buffers and graph capture as for mlagen_decode_run.
 * Device pointers: q [batch, q_len, hq, d], k_cache and v_cache
 * [num_blocks, page_size, hkv, d] (one set of strides for both), out
 * [batch, q_len, hq, d], lse [batch, q_len, hq] fp32 contiguous or NULL,
 * block_table, seq_lens, device_plan, partial_out, partial_lse; k_scale and
 * v_scale: device fp32 [1] (an fp8 cache's per-tensor scales, read on the
 * device so a captured graph sees updates; NULL for 16-bit caches). q_len,
 * num_q_heads and num_kv_heads must equal the kernel's. strides: NULL or 9
 * element strides q_batch, q_token, q_head, out_batch, out_token, out_head,
 * kv_block, kv_token, kv_head; 0 means contiguous. softmax_scale is
 * required (> 0). alibi_slopes: [num_q_heads] fp32 device array, required
 * by an alibi=1 kernel and refused (non-NULL) by any other. plan_slots as
 * for mlagen_decode_run (its grid is always the work capacity). Does not
 * wait for the GPU. */
MLAGEN_C_EXPORT int mlagen_paged_decode_run(
    const mlagen_decode_planner *planner, const void *q, const void *k_cache,
    const void *v_cache, void *out, float *lse, const int32_t *block_table,
    int block_table_stride, const int32_t *seq_lens, const int32_t *device_plan,
    float *partial_out, float *partial_lse, int batch, int q_len,
    int num_q_heads, int num_kv_heads, const int64_t *strides,
    float softmax_scale, const float *k_scale, const float *v_scale,
    const float *alibi_slopes, int plan_slots, void *stream);

/* mlagen_decode_run in checked mode (templates/DECODE_CONTRACT.md, "Checked
 * mode"): error_flags (MLAGEN_DECODE_ERROR_FLAG_INTS device int32, zeroed by
 * the caller; NULL: unchecked, as mlagen_decode_run) receives the first
 * request whose seq_len exceeds max_pages * page_size (max_pages 0: the
 * block_table_stride) or whose block table holds a page outside [0,
 * num_blocks). Such a request reads nothing of the cache and gets zeros
 * (LSE -inf). Does not wait for the GPU: copy the flags to the host after
 * your own sync and pass them to mlagen_decode_error_check. */
#define MLAGEN_DECODE_ERROR_FLAG_INTS 8
MLAGEN_C_EXPORT int mlagen_decode_run_checked(
    const mlagen_decode_planner *planner, const void *q, const void *kv_cache,
    void *out, float *lse, const int32_t *block_table, int block_table_stride,
    const int32_t *seq_lens, const int32_t *device_plan, float *partial_out,
    float *partial_lse, int batch, int q_len, int num_heads,
    const int64_t *strides, float softmax_scale, float q_scale, float kv_scale,
    int32_t *error_flags, int64_t num_blocks, int max_pages, int plan_work,
    int plan_slots, int plan_groups, void *stream);

/* 0 when host_flags (a host copy of a checked decode's error_flags) hold no
 * error; else MLAGEN_INVALID_ARGUMENT (or the status code) with
 * mlagen_last_error naming the request, e.g. "request 3: seq_len 5000 needs
 * 79 pages of 64 keys, block table has 64". Touches no device. */
MLAGEN_C_EXPORT int mlagen_decode_error_check(const int32_t *host_flags);

#ifdef __cplusplus
}
#endif

#endif /* MLAGEN_C_RUNTIME_H */
