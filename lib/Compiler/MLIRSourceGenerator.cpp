//===- MLIRSourceGenerator.cpp - the runtime's generator, through MLIR ----===//
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Templates/Templates.h"

using namespace mlagen;

namespace {

/// Bumped whenever a pass or the emitter changes the source it produces for
/// some signature, so that caches keyed on identity() miss.
/// 2: mla.decode (its target table entries included).
/// 3: decode tilings per rows per block, the kernel owner's defaults.
/// 4: decode's kClusterParts (and, where it is 2, the receive area).
constexpr int kPipelineVersion = 4;

class MLIRSourceGenerator final : public SourceGenerator {
public:
  Status generate(const Signature &sig, GeneratedKernel &out) override {
    return generateHIP(sig, out);
  }

  std::string identity() const override {
    return "mlagen-mlir pipeline=" + std::to_string(kPipelineVersion) +
           " templates=" + std::string(templates::contentHash());
  }
};

} // namespace

std::unique_ptr<SourceGenerator> mlagen::createMLIRSourceGenerator() {
  return std::make_unique<MLIRSourceGenerator>();
}
