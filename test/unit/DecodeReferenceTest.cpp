//===- DecodeReferenceTest.cpp - the paged decode oracle ------------------===//
//
// referenceDecode must agree with referencePrefill on the same attention:
// one kv head holding the gathered pages, V its first columns, q_len
// queries bottom-right causal against seq_len keys. The two share no code
// path for paging, so agreement checks the page walk.
//
//===----------------------------------------------------------------------===//

#include "ReferenceAttention.h"

#include "CatchStatus.h"

#include <cmath>
#include <numeric>
#include <random>

using namespace mlagen::test;

TEST_CASE("paged decode equals prefill on the gathered cache", "[reference]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int qLen : {1, 3}) {
    for (int pageSize : {1, 4}) {
      DecodeProblem d;
      d.headDimQK = 32;
      d.headDimV = 16;
      d.numHeads = 3;
      d.qLen = qLen;
      d.pageSize = pageSize;
      d.softmaxScale = 0.3f;
      d.seqLens = {0, 1, 9, 2};
      const int pagesPerRequest = 9 / pageSize + 1;
      d.blockTableStride = pagesPerRequest + 1; // a spare column
      const int numPages = 4 * pagesPerRequest;
      // Pages in a shuffled order, as a real cache hands them out.
      std::vector<int> pages(numPages);
      std::iota(pages.begin(), pages.end(), 0);
      std::shuffle(pages.begin(), pages.end(), rng);
      d.blockTable.assign(4 * d.blockTableStride, -1);
      for (int b = 0; b < 4; ++b)
        for (int i = 0; i < pagesPerRequest; ++i)
          d.blockTable[b * d.blockTableStride + i] =
              pages[b * pagesPerRequest + i];
      std::vector<float> cache(size_t(numPages) * pageSize * d.headDimQK);
      std::vector<float> q(size_t(4) * qLen * d.numHeads * d.headDimQK);
      for (float &x : cache)
        x = value(rng);
      for (float &x : q)
        x = value(rng);
      std::vector<float> out, lse;
      referenceDecode(d, q, cache, out, lse);

      // The same attention as a varlen prefill with one kv head.
      AttentionProblem p;
      p.headDimQK = d.headDimQK;
      p.headDimV = d.headDimV;
      p.numQHeads = d.numHeads;
      p.numKVHeads = 1;
      p.causal = true;
      p.softmaxScale = d.softmaxScale;
      p.cuSeqlensQ = {0};
      p.cuSeqlensK = {0};
      std::vector<float> k, v;
      for (int b = 0; b < 4; ++b) {
        p.cuSeqlensQ.push_back(p.cuSeqlensQ.back() + qLen);
        p.cuSeqlensK.push_back(p.cuSeqlensK.back() + d.seqLens[b]);
        for (int j = 0; j < d.seqLens[b]; ++j) {
          const int page = d.blockTable[b * d.blockTableStride + j / pageSize];
          const float *row =
              &cache[(size_t(page) * pageSize + j % pageSize) * d.headDimQK];
          k.insert(k.end(), row, row + d.headDimQK);
          v.insert(v.end(), row, row + d.headDimV);
        }
      }
      std::vector<float> prefillOut, prefillLse;
      referencePrefill(p, q, k, v, prefillOut, prefillLse);

      CAPTURE(qLen, pageSize);
      REQUIRE(out.size() == prefillOut.size());
      for (size_t i = 0; i < out.size(); ++i)
        REQUIRE(out[i] == Approx(prefillOut[i]).margin(1e-6));
      // Prefill's LSE is [heads, total_q]; decode's [batch, q_len, heads].
      const int totalQ = 4 * qLen;
      for (int row = 0; row < totalQ; ++row)
        for (int h = 0; h < d.numHeads; ++h) {
          const float a = lse[size_t(row) * d.numHeads + h];
          const float b = prefillLse[size_t(h) * totalQ + row];
          if (std::isinf(b))
            REQUIRE(a == b);
          else
            REQUIRE(a == Approx(b).margin(1e-6));
        }
      // Request 0 has no keys; request 1's earlier tokens see none either.
      CHECK(std::isinf(lse[0]));
      CHECK(out[0] == 0.0f);
    }
  }
}
