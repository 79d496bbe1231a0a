//===- ReferenceAttention.h - CPU prefill attention for tests --*- C++ -*-===//
//
// The straightforward definition of what the prefill kernel computes
// (templates/CONTRACT.md), in fp32 storage with double accumulation:
// varlen batches, bottom-right causal mask, sliding window, tanh soft cap,
// GQA and the natural-log LSE. Slow on purpose: it is the oracle.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_REFERENCEATTENTION_H
#define MLAGEN_TEST_COMMON_REFERENCEATTENTION_H

#include <vector>

namespace mlagen::test {

struct AttentionProblem {
  int headDimQK = 0;
  int headDimV = 0;
  int numQHeads = 1;
  int numKVHeads = 1;
  bool causal = false;
  int windowLeft = -1; // -1: unbounded
  int windowRight = -1;
  float softCap = 0.0f; // 0: off
  float softmaxScale = 1.0f;
  std::vector<int> cuSeqlensQ; // [batch + 1]
  std::vector<int> cuSeqlensK; // [batch + 1]

  int batch() const { return static_cast<int>(cuSeqlensQ.size()) - 1; }
  int totalQ() const { return cuSeqlensQ.back(); }
  int totalK() const { return cuSeqlensK.back(); }
};

// Whether query i of a sequence with seqlens (sq, sk) sees key j.
bool keyVisible(const AttentionProblem &problem, int i, int j, int sq, int sk);

// q: [total_q, hq, dqk], k: [total_k, hkv, dqk], v: [total_k, hkv, dv],
// all contiguous. Writes out: [total_q, hq * dv] and lse: [hq, total_q]
// (a row that sees no key: zeros and -inf).
void referencePrefill(const AttentionProblem &problem,
                      const std::vector<float> &q, const std::vector<float> &k,
                      const std::vector<float> &v, std::vector<float> &out,
                      std::vector<float> &lse);

// vLLM's merge_attn_states: out = the LSE-weighted merge of two partial
// results over disjoint key sets. outs [tokens, heads, dim], LSEs [heads,
// tokens], contiguous. An infinite LSE is an empty part (never read); both
// empty give zeros and -inf. Writes out and lse in the same layouts.
void referenceMergeAttnStates(int tokens, int heads, int dim,
                              const std::vector<float> &prefixOut,
                              const std::vector<float> &prefixLse,
                              const std::vector<float> &suffixOut,
                              const std::vector<float> &suffixLse,
                              std::vector<float> &out, std::vector<float> &lse);

// Absorbed MLA decode over a paged latent cache (DECODE_CONTRACT.md): every
// q head attends to one latent kv head; K is a cache row's headDimQK
// columns, V its first headDimV.
struct DecodeProblem {
  int headDimQK = 576;
  int headDimV = 512;
  int numHeads = 16;
  int qLen = 1;
  int pageSize = 64;
  float softmaxScale = 1.0f;
  std::vector<int> seqLens;    // [batch] keys, the q_len new ones included
  std::vector<int> blockTable; // [batch, blockTableStride] page ids
  int blockTableStride = 0;

  int batch() const { return static_cast<int>(seqLens.size()); }
};

// q: [batch, q_len, heads, dqk], cache: [pages, page_size, dqk], both
// contiguous. Query token t of request b sees keys [0, seq_len - q_len + t];
// key j lives at cache[block_table[b][j / page_size]][j % page_size].
// Writes out: [batch, q_len, heads, dv] and lse: [batch, q_len, heads]
// (a row that sees no key: zeros and -inf). With `emulated`, also the out of
// a bf16 emulation (FlashAttention's test rule): P = exp(s - rowmax) rounded
// to bf16 before P V, the output rounded to bf16.
void referenceDecode(const DecodeProblem &problem, const std::vector<float> &q,
                     const std::vector<float> &cache, std::vector<float> &out,
                     std::vector<float> &lse,
                     std::vector<float> *emulated = nullptr);

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_REFERENCEATTENTION_H
