//===- PagedDecodeParams.h - host mirror of mlagen_paged_decode_params -*- C++ -*-===//
//
// mlagen_paged_decode and mlagen_paged_decode_reduce take this struct by
// value (templates/PAGED_DECODE_CONTRACT.md). The static_asserts pin the
// layout: a field moved on either side is a compile error here.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_PAGEDDECODEPARAMS_H
#define MLAGEN_LIB_RUNTIME_PAGEDDECODEPARAMS_H

#include <cstddef>

namespace mlagen {

struct PagedDecodeParams {
  const void *q;
  const void *k_cache;
  const void *v_cache;
  void *out;
  float *lse;
  const int *block_table;
  const int *seq_lens;
  const int *work;
  const int *num_work;
  const int *merge;
  float *partial_out;
  float *partial_lse;
  const float *k_scale; // fp8 cache: device [1]; else null
  const float *v_scale;
  const float *alibi_slopes; // alibi=1: device [hq]; else null
  long long q_batch_stride, q_token_stride, q_head_stride;
  long long out_batch_stride, out_token_stride, out_head_stride;
  long long kv_block_stride, kv_token_stride, kv_head_stride;
  int block_table_stride;
  int batch;
  float softmax_scale;
  int reserved;
};

static_assert(sizeof(void *) == 8 && sizeof(long long) == 8,
              "mlagen targets 64-bit hosts");
static_assert(offsetof(PagedDecodeParams, q) == 0);
static_assert(offsetof(PagedDecodeParams, k_cache) == 8);
static_assert(offsetof(PagedDecodeParams, v_cache) == 16);
static_assert(offsetof(PagedDecodeParams, out) == 24);
static_assert(offsetof(PagedDecodeParams, lse) == 32);
static_assert(offsetof(PagedDecodeParams, block_table) == 40);
static_assert(offsetof(PagedDecodeParams, seq_lens) == 48);
static_assert(offsetof(PagedDecodeParams, work) == 56);
static_assert(offsetof(PagedDecodeParams, num_work) == 64);
static_assert(offsetof(PagedDecodeParams, merge) == 72);
static_assert(offsetof(PagedDecodeParams, partial_out) == 80);
static_assert(offsetof(PagedDecodeParams, partial_lse) == 88);
static_assert(offsetof(PagedDecodeParams, k_scale) == 96);
static_assert(offsetof(PagedDecodeParams, v_scale) == 104);
static_assert(offsetof(PagedDecodeParams, alibi_slopes) == 112);
static_assert(offsetof(PagedDecodeParams, q_batch_stride) == 120);
static_assert(offsetof(PagedDecodeParams, kv_block_stride) == 168);
static_assert(offsetof(PagedDecodeParams, kv_head_stride) == 184);
static_assert(offsetof(PagedDecodeParams, block_table_stride) == 192);
static_assert(offsetof(PagedDecodeParams, softmax_scale) == 200);
static_assert(sizeof(PagedDecodeParams) == 208);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PAGEDDECODEPARAMS_H
