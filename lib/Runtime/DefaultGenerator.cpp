//===- DefaultGenerator.cpp - the generator the C API uses ----------------===//

#include "mlagen/Runtime/DefaultGenerator.h"

#include <atomic>

namespace mlagen {

// Constant-initialized: safe to set from another library's static
// initializer, whatever the order in which libraries initialize.
static constinit std::atomic<SourceGeneratorFactory> installedFactory{nullptr};

bool setDefaultSourceGenerator(SourceGeneratorFactory factory) {
  installedFactory.store(factory, std::memory_order_release);
  return true;
}

std::unique_ptr<SourceGenerator> createDefaultSourceGenerator() {
  SourceGeneratorFactory factory =
      installedFactory.load(std::memory_order_acquire);
  return factory ? factory() : nullptr;
}

} // namespace mlagen
