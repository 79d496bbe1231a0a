//===- TestSupport.cpp - fakes and fixtures for runtime tests -------------===//

#include "TestSupport.h"
#include "DeviceCompiler.h"
#include "Hash.h"
#include "mlagen/Templates/Templates.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace mlagen::test {

const char *const kTrivialKernelSource = R"(
#ifndef __global__
#define __global__ __attribute__((global))
#endif
extern "C" __global__ void mlagen_test_kernel(int *out) {
  if (out)
    out[0] = 42;
}
)";

Status CountingGenerator::generate(const Signature &sig, GeneratedKernel &out) {
  ++calls_;
  const int now = ++inside_;
  for (int most = mostAtOnce_.load(); now > most;)
    if (mostAtOnce_.compare_exchange_weak(most, now))
      break;
  if (delay.count())
    std::this_thread::sleep_for(delay);
  --inside_;
  if (fail)
    return Status(StatusCode::GeneratorError, "fake generator failed");
  out.source = source;
  out.entryName = entryName;
  out.threadsPerBlock = threadsPerBlock;
  out.sharedBytes = sharedBytes;
  out.tileQ = tileQ ? tileQ : sig.tileQ ? sig.tileQ : 64;
  if (sig.op == OpKind::Prefill)
    out.tileK = sig.tileK ? sig.tileK : tileK;
  if (sig.op == OpKind::Decode) {
    out.tileQ = tileQ ? tileQ : 16;
    out.tileK = sig.tileK ? sig.tileK : tileK;
    out.paddedHeads = paddedHeads ? paddedHeads : sig.numQHeads;
    out.clusterParts = clusterParts;
    out.extraEntries = {{entryName, threadsPerBlock, 0,
                         std::max(1, threadsPerBlock / 128)}};
  }
  return Status::ok();
}

std::function<void(const std::string &)> WarningLog::sink() {
  return [state = state_](const std::string &message) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->messages.push_back(message);
  };
}

std::vector<std::string> WarningLog::messages() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->messages;
}

ScratchDirectory::ScratchDirectory() {
  std::string pattern = "/tmp/mlagen-test-XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ignored);
  std::filesystem::remove_all(path_, ignored);
}

CompileTarget findCompileTarget() {
  std::unique_ptr<DeviceCompiler> compiler;
  Status nvrtc = loadNvrtcCompiler(compiler);
  if (nvrtc)
    return {Arch::SM90A, ""};
  Status clang = findClangCompiler(compiler);
  if (clang)
    return {Arch::GFX942, ""};
  return {std::nullopt, nvrtc.message() + "; " + clang.message()};
}

Arch gpuTestArch(Arch device) {
  const char *text = std::getenv("MLAGEN_TEST_ARCH");
  if (!text || !*text)
    return device;
  Arch arch;
  if (!parseArch(text, arch))
    throw std::invalid_argument(std::string("MLAGEN_TEST_ARCH='") + text +
                                "' names no arch");
  if (isAMD(arch) != isAMD(device))
    throw std::invalid_argument(std::string("MLAGEN_TEST_ARCH=") + text +
                                " cannot run on this " + archName(device) +
                                " device");
  return arch;
}

Signature testSignature(Arch arch, int headDimQK) {
  Signature sig;
  sig.headDimQK = headDimQK;
  sig.arch = arch;
  return sig;
}

std::string cacheVersionDir(const std::string &root) {
  return root + "/v" + std::to_string(kCacheFormatVersion);
}

std::vector<std::string> cacheEntries(const std::string &root) {
  std::vector<std::string> entries;
  std::error_code error;
  for (const auto &file :
       std::filesystem::directory_iterator(cacheVersionDir(root), error))
    if (file.path().extension() == ".entry")
      entries.push_back(file.path().string());
  return entries;
}

std::vector<std::string> templateStructDeclarations(const std::string &path,
                                                    const std::string &name) {
  std::optional<std::string_view> source = templates::lookup(path);
  if (!source)
    return {};
  const std::string text(*source);
  const size_t begin = text.find("struct " + name + " {");
  if (begin == std::string::npos)
    return {};
  const size_t open = text.find('{', begin), end = text.find("};", begin);
  if (end == std::string::npos)
    return {};
  const std::string body = text.substr(open + 1, end - open - 1);
  std::vector<std::string> declarations;
  std::string current;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body.compare(i, 2, "//") == 0) {
      i = body.find('\n', i);
      if (i == std::string::npos)
        break;
      continue;
    }
    if (body[i] == ';') {
      declarations.push_back(current);
      current.clear();
    } else if (!std::isspace(static_cast<unsigned char>(body[i]))) {
      current += body[i];
    }
  }
  return declarations;
}

} // namespace mlagen::test
