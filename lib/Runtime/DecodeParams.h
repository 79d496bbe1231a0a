//===- DecodeParams.h - host mirror of mlagen_decode_params ----*- C++ -*-===//
//
// mlagen_decode and mlagen_decode_reduce take this struct by value
// (templates/DECODE_CONTRACT.md). The static_asserts pin the layout: a field
// moved on either side is a compile error here, not a wrong answer on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DECODEPARAMS_H
#define MLAGEN_LIB_RUNTIME_DECODEPARAMS_H

#include <cstddef>

namespace mlagen {

struct DecodeParams {
  const void *q;
  const void *kv_cache;
  void *out;
  float *lse;
  const int *block_table;
  const int *seq_lens;
  const int *work;
  const int *num_work;
  const int *merge;
  float *partial_out;
  float *partial_lse;
  long long q_batch_stride, q_token_stride, q_head_stride;
  long long out_batch_stride, out_token_stride, out_head_stride;
  long long kv_block_stride, kv_token_stride;
  int block_table_stride;
  int batch;
  float softmax_scale;
  float kv_scale; // fp8 cache: dequantised = kv_scale * stored; else ignored
  // Checked mode (DecodeArgs::checked): kDecodeErrorFlagInts device ints the
  // kernel records the first bad request in; null: unchecked.
  int *error_flags;
  int num_blocks; // pages in the cache (checked mode)
  int max_pages;  // pages of a block-table row (checked mode)
  // 1: kv_map describes the cache for bulk tensor copies (sm_90a kernels
  // that read whole 64-key pages with TMA); 0: those kernels copy with
  // cp.async instead. Other kernels ignore both.
  int kv_map_ready;
  alignas(64) unsigned char kv_map[128]; // a CUtensorMap
  // [batch][row blocks] arrival counters of pairs merged in the grid (in
  // the plan: DecodePlanner::bindPlan); zero between steps.
  int *merge_arrivals;
};

static_assert(sizeof(void *) == 8 && sizeof(long long) == 8,
              "mlagen targets 64-bit hosts");
static_assert(offsetof(DecodeParams, q) == 0);
static_assert(offsetof(DecodeParams, kv_cache) == 8);
static_assert(offsetof(DecodeParams, out) == 16);
static_assert(offsetof(DecodeParams, lse) == 24);
static_assert(offsetof(DecodeParams, block_table) == 32);
static_assert(offsetof(DecodeParams, seq_lens) == 40);
static_assert(offsetof(DecodeParams, work) == 48);
static_assert(offsetof(DecodeParams, num_work) == 56);
static_assert(offsetof(DecodeParams, merge) == 64);
static_assert(offsetof(DecodeParams, partial_out) == 72);
static_assert(offsetof(DecodeParams, partial_lse) == 80);
static_assert(offsetof(DecodeParams, q_batch_stride) == 88);
static_assert(offsetof(DecodeParams, q_token_stride) == 96);
static_assert(offsetof(DecodeParams, q_head_stride) == 104);
static_assert(offsetof(DecodeParams, out_batch_stride) == 112);
static_assert(offsetof(DecodeParams, out_token_stride) == 120);
static_assert(offsetof(DecodeParams, out_head_stride) == 128);
static_assert(offsetof(DecodeParams, kv_block_stride) == 136);
static_assert(offsetof(DecodeParams, kv_token_stride) == 144);
static_assert(offsetof(DecodeParams, block_table_stride) == 152);
static_assert(offsetof(DecodeParams, batch) == 156);
static_assert(offsetof(DecodeParams, softmax_scale) == 160);
static_assert(offsetof(DecodeParams, kv_scale) == 164);
static_assert(offsetof(DecodeParams, error_flags) == 168);
static_assert(offsetof(DecodeParams, num_blocks) == 176);
static_assert(offsetof(DecodeParams, max_pages) == 180);
static_assert(offsetof(DecodeParams, kv_map_ready) == 184);
static_assert(offsetof(DecodeParams, kv_map) == 192);
static_assert(offsetof(DecodeParams, merge_arrivals) == 320);
static_assert(sizeof(DecodeParams) == 384);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DECODEPARAMS_H
