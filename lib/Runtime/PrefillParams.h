//===- PrefillParams.h - host mirror of mlagen_prefill_params --*- C++ -*-===//
//
// The prefill kernel takes this struct by value (templates/CONTRACT.md). The
// static_asserts pin the layout: a field moved on either side is a compile
// error here, not a wrong answer on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_PREFILLPARAMS_H
#define MLAGEN_LIB_RUNTIME_PREFILLPARAMS_H

#include <cstddef>

namespace mlagen {

struct PrefillParams {
  const void *q;
  const void *k;
  const void *v;
  void *out;
  float *lse;
  const int *cu_seqlens_q;
  const int *cu_seqlens_k;
  long long q_token_stride, q_head_stride;
  long long k_token_stride, k_head_stride;
  long long v_token_stride, v_head_stride;
  long long out_token_stride, out_head_stride;
  long long lse_head_stride;
  int batch;
  int max_seqlen_q;
  float softmax_scale;
  // 1: k_map and v_map describe k and v for the sm_90a wgmma kernel's bulk
  // tensor copies; 0: the kernels copy with cp.async. Other kernels ignore
  // all three.
  int kv_maps_ready;
  const float *alibi_slopes;
  alignas(64) unsigned char k_map[128]; // a CUtensorMap
  alignas(64) unsigned char v_map[128];
};

static_assert(sizeof(void *) == 8 && sizeof(long long) == 8,
              "mlagen targets 64-bit hosts");
static_assert(offsetof(PrefillParams, q) == 0);
static_assert(offsetof(PrefillParams, k) == 8);
static_assert(offsetof(PrefillParams, v) == 16);
static_assert(offsetof(PrefillParams, out) == 24);
static_assert(offsetof(PrefillParams, lse) == 32);
static_assert(offsetof(PrefillParams, cu_seqlens_q) == 40);
static_assert(offsetof(PrefillParams, cu_seqlens_k) == 48);
static_assert(offsetof(PrefillParams, q_token_stride) == 56);
static_assert(offsetof(PrefillParams, q_head_stride) == 64);
static_assert(offsetof(PrefillParams, k_token_stride) == 72);
static_assert(offsetof(PrefillParams, k_head_stride) == 80);
static_assert(offsetof(PrefillParams, v_token_stride) == 88);
static_assert(offsetof(PrefillParams, v_head_stride) == 96);
static_assert(offsetof(PrefillParams, out_token_stride) == 104);
static_assert(offsetof(PrefillParams, out_head_stride) == 112);
static_assert(offsetof(PrefillParams, lse_head_stride) == 120);
static_assert(offsetof(PrefillParams, batch) == 128);
static_assert(offsetof(PrefillParams, max_seqlen_q) == 132);
static_assert(offsetof(PrefillParams, softmax_scale) == 136);
static_assert(offsetof(PrefillParams, kv_maps_ready) == 140);
static_assert(offsetof(PrefillParams, alibi_slopes) == 144);
static_assert(offsetof(PrefillParams, k_map) == 192);
static_assert(offsetof(PrefillParams, v_map) == 320);
static_assert(sizeof(PrefillParams) == 448);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PREFILLPARAMS_H
