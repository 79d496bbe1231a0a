//===- ReferenceAttention.cpp - CPU prefill attention for tests -----------===//

#include "ReferenceAttention.h"

#include "BFloat16.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlagen::test {

void referenceMergeAttnStates(int tokens, int heads, int dim,
                              const std::vector<float> &prefixOut,
                              const std::vector<float> &prefixLse,
                              const std::vector<float> &suffixOut,
                              const std::vector<float> &suffixLse,
                              std::vector<float> &out,
                              std::vector<float> &lse) {
  const double negInf = -std::numeric_limits<double>::infinity();
  out.assign(static_cast<size_t>(tokens) * heads * dim, 0.0f);
  lse.assign(static_cast<size_t>(heads) * tokens,
             -std::numeric_limits<float>::infinity());
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const size_t l = static_cast<size_t>(h) * tokens + t;
      double lp = prefixLse[l], ls = suffixLse[l];
      if (std::isinf(lp))
        lp = negInf;
      if (std::isinf(ls))
        ls = negInf;
      const double m = std::max(lp, ls);
      if (m == negInf)
        continue; // both empty: zeros, -inf
      const double wp = std::exp(lp - m), ws = std::exp(ls - m);
      const double total = wp + ws;
      const size_t row = (static_cast<size_t>(t) * heads + h) * dim;
      for (int d = 0; d < dim; ++d) {
        double value = 0.0;
        if (wp > 0.0)
          value += wp / total * prefixOut[row + d];
        if (ws > 0.0)
          value += ws / total * suffixOut[row + d];
        out[row + d] = static_cast<float>(value);
      }
      lse[l] = static_cast<float>(m + std::log(total));
    }
  }
}

bool keyVisible(const AttentionProblem &p, int i, int j, int sq, int sk) {
  // Bottom-right alignment: the last query lines up with the last key.
  const int diagonal = i + sk - sq;
  if (p.causal && j > diagonal)
    return false;
  if (p.windowLeft >= 0 && j < diagonal - p.windowLeft)
    return false;
  if (p.windowRight >= 0 && j > diagonal + p.windowRight)
    return false;
  return true;
}

void referencePrefill(const AttentionProblem &p, const std::vector<float> &q,
                      const std::vector<float> &k, const std::vector<float> &v,
                      std::vector<float> &out, std::vector<float> &lse) {
  const int dqk = p.headDimQK, dv = p.headDimV;
  const int hq = p.numQHeads, hkv = p.numKVHeads, group = hq / hkv;
  const int totalQ = p.totalQ();
  out.assign(static_cast<size_t>(totalQ) * hq * dv, 0.0f);
  lse.assign(static_cast<size_t>(hq) * totalQ,
             -std::numeric_limits<float>::infinity());

  std::vector<double> logits, acc(dv);
  for (int b = 0; b < p.batch(); ++b) {
    const int q0 = p.cuSeqlensQ[b], sq = p.cuSeqlensQ[b + 1] - q0;
    const int k0 = p.cuSeqlensK[b], sk = p.cuSeqlensK[b + 1] - k0;
    for (int h = 0; h < hq; ++h) {
      const int kvh = h / group;
      for (int i = 0; i < sq; ++i) {
        const float *qi = &q[(static_cast<size_t>(q0 + i) * hq + h) * dqk];
        logits.assign(sk, -std::numeric_limits<double>::infinity());
        double rowMax = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < sk; ++j) {
          if (!keyVisible(p, i, j, sq, sk))
            continue;
          const float *kj = &k[(static_cast<size_t>(k0 + j) * hkv + kvh) * dqk];
          double dot = 0.0;
          for (int d = 0; d < dqk; ++d)
            dot += static_cast<double>(qi[d]) * kj[d];
          double s = p.softmaxScale * dot;
          if (p.softCap > 0.0f)
            s = p.softCap * std::tanh(s / p.softCap);
          logits[j] = s;
          rowMax = std::max(rowMax, s);
        }
        if (std::isinf(rowMax))
          continue; // no visible key: zeros, LSE = -inf

        double sum = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int j = 0; j < sk; ++j) {
          if (std::isinf(logits[j]))
            continue;
          const double w = std::exp(logits[j] - rowMax);
          sum += w;
          const float *vj = &v[(static_cast<size_t>(k0 + j) * hkv + kvh) * dv];
          for (int d = 0; d < dv; ++d)
            acc[d] += w * vj[d];
        }
        float *o = &out[static_cast<size_t>(q0 + i) * hq * dv +
                        static_cast<size_t>(h) * dv];
        for (int d = 0; d < dv; ++d)
          o[d] = static_cast<float>(acc[d] / sum);
        lse[static_cast<size_t>(h) * totalQ + q0 + i] =
            static_cast<float>(rowMax + std::log(sum));
      }
    }
  }
}

} // namespace mlagen::test

namespace mlagen::test {

void referenceDecode(const DecodeProblem &p, const std::vector<float> &q,
                     const std::vector<float> &cache, std::vector<float> &out,
                     std::vector<float> &lse, std::vector<float> *emulated) {
  const int dqk = p.headDimQK, dv = p.headDimV, heads = p.numHeads;
  const size_t rows = static_cast<size_t>(p.batch()) * p.qLen * heads;
  out.assign(rows * dv, 0.0f);
  lse.assign(rows, -std::numeric_limits<float>::infinity());
  if (emulated)
    emulated->assign(rows * dv, 0.0f);

  std::vector<double> logits, acc(dv), accRounded(dv);
  for (int b = 0; b < p.batch(); ++b) {
    const int seqLen = p.seqLens[b];
    auto keyRow = [&](int j) {
      const int page =
          p.blockTable[static_cast<size_t>(b) * p.blockTableStride +
                       j / p.pageSize];
      return &cache[(static_cast<size_t>(page) * p.pageSize + j % p.pageSize) *
                    dqk];
    };
    for (int t = 0; t < p.qLen; ++t) {
      const int visible = std::max(0, seqLen - p.qLen + t + 1);
      for (int h = 0; h < heads; ++h) {
        const size_t row = (static_cast<size_t>(b) * p.qLen + t) * heads + h;
        if (visible == 0)
          continue; // zeros, LSE = -inf
        const float *qi = &q[row * dqk];
        logits.resize(visible);
        double rowMax = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < visible; ++j) {
          const float *kj = keyRow(j);
          double dot = 0.0;
          for (int d = 0; d < dqk; ++d)
            dot += static_cast<double>(qi[d]) * kj[d];
          logits[j] = p.softmaxScale * dot;
          rowMax = std::max(rowMax, logits[j]);
        }
        double sum = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        std::fill(accRounded.begin(), accRounded.end(), 0.0);
        for (int j = 0; j < visible; ++j) {
          const double w = std::exp(logits[j] - rowMax);
          const double wRounded = roundToBF16(static_cast<float>(w));
          sum += w;
          const float *vj = keyRow(j); // V: the first dv columns
          for (int d = 0; d < dv; ++d)
            acc[d] += w * vj[d];
          for (int d = 0; emulated && d < dv; ++d)
            accRounded[d] += wRounded * vj[d];
        }
        for (int d = 0; d < dv; ++d) {
          out[row * dv + d] = static_cast<float>(acc[d] / sum);
          if (emulated)
            (*emulated)[row * dv + d] =
                roundToBF16(static_cast<float>(accRounded[d] / sum));
        }
        lse[row] = static_cast<float>(rowMax + std::log(sum));
      }
    }
  }
}

} // namespace mlagen::test
