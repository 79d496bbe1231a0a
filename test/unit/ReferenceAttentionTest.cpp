//===- ReferenceAttentionTest.cpp - the CPU oracle checks out -------------===//

#include "ReferenceAttention.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace mlagen::test;

namespace {

std::vector<float> randomValues(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = dist(rng);
  return values;
}

AttentionProblem oneSequence(int dqk, int dv, int sq, int sk) {
  AttentionProblem p;
  p.headDimQK = dqk;
  p.headDimV = dv;
  p.cuSeqlensQ = {0, sq};
  p.cuSeqlensK = {0, sk};
  return p;
}

} // namespace

TEST_CASE("a hand-checked 2x2 case", "[reference]") {
  // One head, d = 2, two queries and two keys, scale 1, no mask.
  AttentionProblem p = oneSequence(2, 2, 2, 2);
  std::vector<float> q = {1, 0, 0, 1}, k = {1, 0, 0, 1},
                     v = {1, 2, 3, 4}, out, lse;
  referencePrefill(p, q, k, v, out, lse);
  // Row 0: logits (1, 0); weights e/(e+1), 1/(e+1).
  const double e = std::exp(1.0), w0 = e / (e + 1), w1 = 1 / (e + 1);
  CHECK(out[0] == Approx(w0 * 1 + w1 * 3));
  CHECK(out[1] == Approx(w0 * 2 + w1 * 4));
  // Row 1: logits (0, 1).
  CHECK(out[2] == Approx(w1 * 1 + w0 * 3));
  CHECK(out[3] == Approx(w1 * 2 + w0 * 4));
  CHECK(lse[0] == Approx(std::log(e + 1)));
  CHECK(lse[1] == Approx(std::log(e + 1)));

  // Causal: query 0 sees key 0 only.
  p.causal = true;
  referencePrefill(p, q, k, v, out, lse);
  CHECK(out[0] == Approx(1));
  CHECK(out[1] == Approx(2));
  CHECK(lse[0] == Approx(1));
}

TEST_CASE("softmax rows sum to one", "[reference]") {
  // With every value row equal to ones, each output is the weight sum.
  AttentionProblem p = oneSequence(32, 16, 9, 13);
  p.numQHeads = 4;
  p.numKVHeads = 2;
  p.causal = true;
  p.softCap = 5.0f;
  p.softmaxScale = 0.3f;
  std::vector<float> q = randomValues(9 * 4 * 32, 1);
  std::vector<float> k = randomValues(13 * 2 * 32, 2);
  std::vector<float> v(13 * 2 * 16, 1.0f), out, lse;
  referencePrefill(p, q, k, v, out, lse);
  for (float value : out)
    CHECK(value == Approx(1.0f));
}

TEST_CASE("the first causal row is v[0]", "[reference]") {
  AttentionProblem p = oneSequence(16, 16, 5, 5);
  p.causal = true;
  std::vector<float> q = randomValues(5 * 16, 3), k = randomValues(5 * 16, 4),
                     v = randomValues(5 * 16, 5), out, lse;
  referencePrefill(p, q, k, v, out, lse);
  for (int d = 0; d < 16; ++d)
    CHECK(out[d] == Approx(v[d]));
}

TEST_CASE("causal masks align bottom-right and windows bound the keys",
          "[reference]") {
  AttentionProblem p = oneSequence(16, 16, 2, 5);
  p.causal = true;
  // sk - sq = 3: query 0 sees keys 0..3, query 1 sees 0..4.
  CHECK(keyVisible(p, 0, 3, 2, 5));
  CHECK_FALSE(keyVisible(p, 0, 4, 2, 5));
  CHECK(keyVisible(p, 1, 4, 2, 5));
  p.windowLeft = 1;
  CHECK_FALSE(keyVisible(p, 0, 1, 2, 5));
  CHECK(keyVisible(p, 0, 2, 2, 5));
  p.causal = false;
  p.windowLeft = -1;
  p.windowRight = 0;
  CHECK_FALSE(keyVisible(p, 0, 4, 2, 5));
  CHECK(keyVisible(p, 0, 0, 2, 5));
}

TEST_CASE("a row that sees no key is zero with LSE -inf", "[reference]") {
  // More queries than keys with a causal mask: the first rows see nothing.
  AttentionProblem p = oneSequence(16, 16, 4, 2);
  p.causal = true;
  std::vector<float> q = randomValues(4 * 16, 6), k = randomValues(2 * 16, 7),
                     v = randomValues(2 * 16, 8), out, lse;
  referencePrefill(p, q, k, v, out, lse);
  for (int d = 0; d < 16; ++d)
    CHECK(out[d] == 0.0f);
  CHECK(lse[0] == -std::numeric_limits<float>::infinity());
  CHECK(lse[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isfinite(lse[2])); // query 2 sees key 0
  for (int d = 0; d < 16; ++d)
    CHECK(out[2 * 16 + d] == Approx(v[d]));
}

TEST_CASE("GQA heads share their kv head, and sequences stay apart",
          "[reference]") {
  AttentionProblem p;
  p.headDimQK = p.headDimV = 16;
  p.numQHeads = 4;
  p.numKVHeads = 2;
  p.cuSeqlensQ = {0, 3, 5};
  p.cuSeqlensK = {0, 4, 9};
  std::vector<float> q(5 * 4 * 16), k = randomValues(9 * 2 * 16, 9),
                     v = randomValues(9 * 2 * 16, 10), out, lse;
  // Equal queries for heads 0 and 1 (kv head 0) and heads 2 and 3.
  std::vector<float> base = randomValues(5 * 2 * 16, 11);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 4; ++h)
      for (int d = 0; d < 16; ++d)
        q[(t * 4 + h) * 16 + d] = base[(t * 2 + h / 2) * 16 + d];
  referencePrefill(p, q, k, v, out, lse);
  for (int t = 0; t < 5; ++t)
    for (int d = 0; d < 16; ++d) {
      CHECK(out[t * 64 + 0 * 16 + d] == out[t * 64 + 1 * 16 + d]);
      CHECK(out[t * 64 + 2 * 16 + d] == out[t * 64 + 3 * 16 + d]);
    }

  // Sequence 1 alone gives the same answer: no key of sequence 0 leaks in.
  AttentionProblem second = p;
  second.cuSeqlensQ = {0, 2};
  second.cuSeqlensK = {0, 5};
  std::vector<float> q1(q.begin() + 3 * 64, q.end());
  std::vector<float> k1(k.begin() + 4 * 32, k.end()), v1(v.begin() + 4 * 32, v.end());
  std::vector<float> out1, lse1;
  referencePrefill(second, q1, k1, v1, out1, lse1);
  for (size_t i = 0; i < out1.size(); ++i)
    CHECK(out1[i] == Approx(out[3 * 64 + i]));
  CHECK(lse1[0] == Approx(lse[3])); // head 0, token 3
}

TEST_CASE("the soft cap bounds every logit", "[reference]") {
  // Huge logits under a cap of 1 behave like logits in [-1, 1]: LSE is at
  // most 1 + log(sk).
  AttentionProblem p = oneSequence(16, 16, 3, 6);
  p.softCap = 1.0f;
  p.softmaxScale = 100.0f;
  std::vector<float> q = randomValues(3 * 16, 12), k = randomValues(6 * 16, 13),
                     v = randomValues(6 * 16, 14), out, lse;
  referencePrefill(p, q, k, v, out, lse);
  for (float value : lse)
    CHECK(value <= 1.0f + std::log(6.0f) + 1e-5f);
}

TEST_CASE("merge_attn_states takes an empty part as weight zero",
          "[reference][merge-attn-states]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 4 tokens, 1 head, dim 2: equal LSEs, prefix empty (its output NaN),
  // suffix +inf (empty, as vLLM reads it), both empty.
  std::vector<float> po = {1, 2, nan, nan, 5, 6, 7, 8};
  std::vector<float> so = {3, 4, 9, 10, nan, nan, 11, 12};
  std::vector<float> pl = {0.5f, -inf, 1.0f, -inf};
  std::vector<float> sl = {0.5f, 2.0f, inf, -inf};
  std::vector<float> out, lse;
  referenceMergeAttnStates(4, 1, 2, po, pl, so, sl, out, lse);
  CHECK(out == std::vector<float>{2, 3, 9, 10, 5, 6, 0, 0});
  CHECK(lse[0] == Approx(0.5 + std::log(2.0)));
  CHECK(lse[1] == Approx(2.0));
  CHECK(lse[2] == Approx(1.0));
  CHECK(lse[3] == -inf);
}

// Issue 3 item 7 on the CPU: a chunked-context prefill (the new tokens
// against each context chunk without a mask, against themselves causally,
// merged by LSE) is one causal attention over context + new tokens. The
// GPU runs the same composition in python/tests/merge_attn_states_device_test.py.
TEST_CASE("chunked-context prefill merged by LSE is full causal attention",
          "[reference][merge-attn-states]") {
  const int dqk = 24, dv = 16, heads = 2;
  const std::vector<int> ctx = {0, 9, 20}, news = {3, 1, 5};
  const int chunk = 8;
  const int batch = static_cast<int>(ctx.size());
  std::vector<int> cuNew = {0}, cuFull = {0};
  for (int b = 0; b < batch; ++b) {
    cuNew.push_back(cuNew.back() + news[b]);
    cuFull.push_back(cuFull.back() + ctx[b] + news[b]);
  }
  const int totalNew = cuNew.back(), totalFull = cuFull.back();
  std::vector<float> q = randomValues(size_t(totalNew) * heads * dqk, 11);
  std::vector<float> k = randomValues(size_t(totalFull) * heads * dqk, 12);
  std::vector<float> v = randomValues(size_t(totalFull) * heads * dv, 13);
  // Rows [begin, end) of request b's keys (context first, then new).
  auto rows = [&](const std::vector<float> &x, int width, int b, int begin,
                  int end) {
    return std::vector<float>(
        x.begin() + (size_t(cuFull[b]) + begin) * heads * width,
        x.begin() + (size_t(cuFull[b]) + end) * heads * width);
  };
  auto base = [&](bool causal) {
    AttentionProblem p;
    p.headDimQK = dqk;
    p.headDimV = dv;
    p.numQHeads = p.numKVHeads = heads;
    p.causal = causal;
    p.softmaxScale = 0.3f;
    p.cuSeqlensQ = cuNew;
    p.cuSeqlensK = {0};
    return p;
  };

  AttentionProblem full = base(true);
  full.cuSeqlensK = cuFull;
  std::vector<float> refOut, refLse;
  referencePrefill(full, q, k, v, refOut, refLse);

  // The new tokens against themselves.
  AttentionProblem self = base(true);
  std::vector<float> kNew, vNew;
  for (int b = 0; b < batch; ++b) {
    self.cuSeqlensK.push_back(self.cuSeqlensK.back() + news[b]);
    auto kb = rows(k, dqk, b, ctx[b], ctx[b] + news[b]);
    auto vb = rows(v, dv, b, ctx[b], ctx[b] + news[b]);
    kNew.insert(kNew.end(), kb.begin(), kb.end());
    vNew.insert(vNew.end(), vb.begin(), vb.end());
  }
  std::vector<float> accOut, accLse;
  referencePrefill(self, q, kNew, vNew, accOut, accLse);

  // Each context chunk, merged in (a request past its context brings an
  // empty chunk: LSE -inf).
  for (int c = 0; c * chunk < 20; ++c) {
    AttentionProblem part = base(false);
    std::vector<float> kc, vc;
    for (int b = 0; b < batch; ++b) {
      const int begin = std::min(c * chunk, ctx[b]);
      const int end = std::min((c + 1) * chunk, ctx[b]);
      part.cuSeqlensK.push_back(part.cuSeqlensK.back() + end - begin);
      auto kb = rows(k, dqk, b, begin, end);
      auto vb = rows(v, dv, b, begin, end);
      kc.insert(kc.end(), kb.begin(), kb.end());
      vc.insert(vc.end(), vb.begin(), vb.end());
    }
    std::vector<float> partOut, partLse, mergedOut, mergedLse;
    referencePrefill(part, q, kc, vc, partOut, partLse);
    referenceMergeAttnStates(totalNew, heads, dv, partOut, partLse, accOut,
                             accLse, mergedOut, mergedLse);
    accOut = mergedOut;
    accLse = mergedLse;
  }
  REQUIRE(accOut.size() == refOut.size());
  for (size_t i = 0; i < refOut.size(); ++i)
    CHECK(accOut[i] == Approx(refOut[i]).margin(1e-5));
  for (size_t i = 0; i < refLse.size(); ++i)
    CHECK(accLse[i] == Approx(refLse[i]).epsilon(1e-5));
}
