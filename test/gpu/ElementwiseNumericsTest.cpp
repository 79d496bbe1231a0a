//===- ElementwiseNumericsTest.cpp - issue 3's small kernels on the GPU ---===//
//
// merge_attn_states against referenceMergeAttnStates (bf16, empty parts,
// NaN in an empty part's output, strided LSE rows), expand_page_indices
// against the host formula (a page size that is no power of two, seq_starts),
// kv_cache_write bitwise (slot -1 skips). Without a GPU it says "skipped: no
// GPU (<reason>)" and passes. python/tests/merge_attn_states_device_test.py
// and kv_cache_write_device_test.py cover larger grids and the chunked-context
// prefill proof.
//
//===----------------------------------------------------------------------===//

#include "BFloat16.h"
#include "DeviceBuffer.h"
#include "ReferenceAttention.h"
#include "TestSupport.h"
#include "mlagen/Compiler/Pipeline.h"

#include <cmath>
#include <iostream>
#include <limits>
#include <random>

using namespace mlagen;
using namespace mlagen::test;

namespace {

struct Fixture {
  ScratchDirectory cacheDir;
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<DeviceBackend> backend;
  Arch arch = Arch::SM90A;
};

bool openGpu(Fixture &fixture) {
  RuntimeOptions options;
  options.generator = createMLIRSourceGenerator();
  options.cacheDir = fixture.cacheDir.path();
  REQUIRE(Runtime::create(std::move(options), fixture.runtime));
  Status device = fixture.runtime->deviceArch(fixture.arch);
  if (!device) {
    std::cout << "skipped: no GPU (" << device.message() << ")\n";
    WARN("skipped: no GPU (" << device.message() << ")");
    return false;
  }
  fixture.arch = gpuTestArch(fixture.arch);
  REQUIRE(openDeviceBackend(BackendKind::Auto, 0, fixture.backend));
  return true;
}

} // namespace

TEST_CASE("merge_attn_states matches the CPU reference", "[gpu][merge]") {
  Fixture f;
  if (!openGpu(f))
    return;
  const int tokens = 300, heads = 16, dim = 128, lseRow = tokens + 5;
  Signature sig = Signature::mergeAttnStates();
  sig.arch = f.arch;
  const Kernel *kernel = nullptr;
  REQUIRE(f.runtime->getKernel(sig, kernel));

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f), logit(-6.0f, 6.0f);
  const size_t n = size_t(tokens) * heads * dim;
  std::vector<uint16_t> po(n), so(n);
  std::vector<float> pof(n), sof(n);
  for (size_t i = 0; i < n; ++i) {
    po[i] = floatToBF16(value(rng));
    so[i] = floatToBF16(value(rng));
    pof[i] = bf16ToFloat(po[i]);
    sof[i] = bf16ToFloat(so[i]);
  }
  const float inf = std::numeric_limits<float>::infinity();
  // LSE rows of lseRow floats, as a prefill over more tokens writes them.
  std::vector<float> pl(size_t(heads) * lseRow), sl(size_t(heads) * lseRow);
  std::vector<float> plRef(size_t(heads) * tokens), slRef(plRef.size());
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < tokens; ++t) {
      float a = logit(rng), b = logit(rng);
      if (t % 7 == 0)
        a = -inf; // prefix empty
      if (t % 11 == 0)
        b = t % 2 ? inf : -inf; // suffix empty (+inf as vLLM reads it)
      pl[size_t(h) * lseRow + t] = plRef[size_t(h) * tokens + t] = a;
      sl[size_t(h) * lseRow + t] = slRef[size_t(h) * tokens + t] = b;
    }
  // An empty part's rows may hold anything: NaN must not leak.
  for (int t = 0; t < tokens; t += 7)
    for (int i = 0; i < heads * dim; ++i)
      po[size_t(t) * heads * dim + i] = 0x7fc0;
  std::vector<float> refOut, refLse;
  referenceMergeAttnStates(tokens, heads, dim, pof, plRef, sof, slRef, refOut,
                           refLse);

  DeviceBuffer dPo(*f.backend, po), dSo(*f.backend, so), dPl(*f.backend, pl),
      dSl(*f.backend, sl);
  DeviceBuffer dOut(*f.backend, n * 2), dLse(*f.backend, refLse.size() * 4);
  MergeAttnStatesArgs args;
  args.prefixOut = dPo.get();
  args.prefixLse = dPl.get<float>();
  args.suffixOut = dSo.get();
  args.suffixLse = dSl.get<float>();
  args.out = dOut.get();
  args.outLse = dLse.get<float>();
  args.numTokens = tokens;
  args.numHeads = heads;
  args.headDim = dim;
  args.prefixLseHeadStride = args.suffixLseHeadStride = lseRow;
  REQUIRE(f.runtime->runMergeAttnStates(*kernel, args));
  REQUIRE(f.backend->synchronize());
  std::vector<uint16_t> out = dOut.download<uint16_t>();
  std::vector<float> lse = dLse.download<float>();
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const float got = bf16ToFloat(out[i]);
    // One bf16 rounding of the fp32 result, plus exp2/log2 approximations.
    if (!(std::fabs(got - refOut[i]) <= 1e-5f + std::fabs(refOut[i]) / 256))
      ++bad;
  }
  for (size_t i = 0; i < refLse.size(); ++i) {
    if (std::isinf(refLse[i]) ? lse[i] != refLse[i]
                              : !(std::fabs(lse[i] - refLse[i]) <=
                                  1e-4f * std::max(1.0f, std::fabs(refLse[i]))))
      ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("expand_page_indices and kv_cache_write match the host",
          "[gpu][expand][kv-write]") {
  Fixture f;
  if (!openGpu(f))
    return;
  const int page = 48; // no power of two
  const std::vector<int> lens = {0, 1, 130, 49}, starts = {3, 0, 47, 100};
  const int batch = 4, stride = 8;
  std::vector<int> cu = {0};
  for (int n : lens)
    cu.push_back(cu.back() + n);
  const int total = cu.back();
  std::vector<int> table(size_t(batch) * stride);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = int((i * 7 + 3) % table.size()); // distinct, shuffled
  std::vector<int> expected;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < lens[b]; ++i) {
      const int p = starts[b] + i;
      expected.push_back(table[size_t(b) * stride + p / page] * page +
                         p % page);
    }

  Signature expandSig = Signature::expandPageIndices();
  expandSig.pageSize = page;
  expandSig.arch = f.arch;
  const Kernel *expand = nullptr;
  REQUIRE(f.runtime->getKernel(expandSig, expand));
  DeviceBuffer dTable(*f.backend, table), dCu(*f.backend, cu),
      dStarts(*f.backend, starts), dSlots(*f.backend, size_t(total) * 4);
  ExpandPageIndicesArgs e;
  e.blockTable = dTable.get<int>();
  e.blockTableStride = stride;
  e.cuSeqlens = dCu.get<int>();
  e.seqStarts = dStarts.get<int>();
  e.slots = dSlots.get<int>();
  e.batch = batch;
  e.maxSeqlen = 130;
  REQUIRE(f.runtime->runExpandPageIndices(*expand, e));
  REQUIRE(f.backend->synchronize());
  std::vector<int> slots = dSlots.download<int>();
  CHECK(slots == expected);

  // Write those tokens (and a skipped one) into a cache of 576-wide rows.
  Signature writeSig = Signature::kvCacheWrite();
  writeSig.pageSize = page;
  writeSig.arch = f.arch;
  const Kernel *write = nullptr;
  REQUIRE(f.runtime->getKernel(writeSig, write));
  const int tokens = total + 1, row = 576, numBlocks = batch * stride;
  std::vector<int> mapping = expected;
  mapping.push_back(-1);
  std::vector<uint16_t> latent(size_t(tokens) * 512), rope(size_t(tokens) * 64);
  for (size_t i = 0; i < latent.size(); ++i)
    latent[i] = uint16_t(i * 13 + 1);
  for (size_t i = 0; i < rope.size(); ++i)
    rope[i] = uint16_t(i * 17 + 5);
  std::vector<uint16_t> cache(size_t(numBlocks) * page * row, 0xabcd);
  DeviceBuffer dLatent(*f.backend, latent), dRope(*f.backend, rope),
      dCache(*f.backend, cache), dMap(*f.backend, mapping);
  KVCacheWriteArgs w;
  w.kvC = dLatent.get();
  w.kPe = dRope.get();
  w.kvCache = dCache.get();
  w.slotMapping = dMap.get<int>();
  w.numTokens = tokens;
  REQUIRE(f.runtime->runKVCacheWrite(*write, w));
  REQUIRE(f.backend->synchronize());
  for (int t = 0; t < total; ++t) {
    const size_t r = size_t(mapping[t]) * row;
    for (int d = 0; d < 512; ++d)
      cache[r + d] = latent[size_t(t) * 512 + d];
    for (int d = 0; d < 64; ++d)
      cache[r + 512 + d] = rope[size_t(t) * 64 + d];
  }
  CHECK(dCache.download<uint16_t>() == cache);
}
