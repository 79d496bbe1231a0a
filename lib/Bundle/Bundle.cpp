//===- Bundle.cpp - build kernels ahead of time into a bundle -------------===//

#include "mlagen/Bundle/Bundle.h"
#include "BundleManifest.h" // lib/Runtime: the runtime reads what this writes
#include "Hash.h"
#include "ParallelFor.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace fs = std::filesystem;

namespace mlagen {

std::vector<Signature> defaultVariantSet(const std::vector<Arch> &archs) {
  std::vector<Signature> set;
  for (Arch arch : archs)
    for (int heads : {16, 128})
      for (Mask mask : {Mask::Causal, Mask::None}) {
        Signature sig;
        sig.headDimQK = 192;
        sig.headDimV = 128;
        sig.numQHeads = heads;
        sig.numKVHeads = heads;
        sig.mask = mask;
        sig.arch = arch;
        set.push_back(sig);
      }
  // GQA prefill, bf16, with LSE, causal: Llama-3-8B (32 q / 8 kv heads,
  // d128); Gemma-2-9B (16 / 8, d256, soft cap 50, 4096-key sliding window);
  // an ALiBi model of MPT-7B's shape (32 / 32, d128).
  for (Arch arch : archs) {
    Signature llama;
    llama.headDimQK = llama.headDimV = 128;
    llama.numQHeads = 32;
    llama.numKVHeads = 8;
    llama.arch = arch;
    Signature gemma = llama;
    gemma.headDimQK = gemma.headDimV = 256;
    gemma.numQHeads = 16;
    gemma.softCap = 50.0f;
    gemma.windowLeft = 4095;
    Signature mpt = llama;
    mpt.numKVHeads = 32;
    mpt.alibi = true;
    set.insert(set.end(), {llama, gemma, mpt});
  }
  // Absorbed MLA decode, 576/512, bf16 q, with LSE: TP8 (16 heads) and TP1
  // (128), with vLLM's 64-key pages and SGLang's 1-key pages; a bf16 cache,
  // and an fp8 e4m3 one where the arch converts fp8 (not gfx90a).
  for (Arch arch : archs)
    for (DType cache : {DType::BF16, DType::FP8E4M3})
      for (int heads : {16, 128})
        for (int pageSize : {64, 1}) {
          if (cache == DType::FP8E4M3 && arch == Arch::GFX90A)
            continue;
          Signature sig = Signature::decode();
          sig.numQHeads = heads;
          sig.pageSize = pageSize;
          sig.kvType = cache;
          sig.arch = arch;
          set.push_back(sig);
          // fp8 q on the fp8 cache (its scale at run time), bf16 out.
          if (cache == DType::FP8E4M3) {
            sig.qType = DType::FP8E4M3;
            set.push_back(sig);
          }
        }
  // The MLA KV-cache write feeding those caches: bf16, and bf16 quantised
  // to fp8 e4m3 where the arch converts fp8.
  for (Arch arch : archs)
    for (DType cache : {DType::BF16, DType::FP8E4M3})
      for (int pageSize : {64, 1}) {
        if (cache == DType::FP8E4M3 && arch == Arch::GFX90A)
          continue;
        Signature sig = Signature::kvCacheWrite();
        sig.pageSize = pageSize;
        sig.kvType = cache;
        sig.arch = arch;
        set.push_back(sig);
      }
  // The GQA KV-cache write at Llama-3-8B's shape (8 kv heads of 128) with
  // vLLM's 16-key pages and 64-key ones: bf16, and fp8 e4m3 where the arch
  // converts fp8.
  for (Arch arch : archs)
    for (DType cache : {DType::BF16, DType::FP8E4M3})
      for (int pageSize : {16, 64}) {
        if (cache == DType::FP8E4M3 && arch == Arch::GFX90A)
          continue;
        Signature sig = Signature::reshapeAndCache();
        sig.pageSize = pageSize;
        sig.kvType = cache;
        sig.arch = arch;
        set.push_back(sig);
      }
  // Its read side for extend (chunked prefill): the same caches gathered
  // into bf16 keys and values.
  for (Arch arch : archs)
    for (DType cache : {DType::BF16, DType::FP8E4M3})
      for (int pageSize : {16, 64}) {
        if (cache == DType::FP8E4M3 && arch == Arch::GFX90A)
          continue;
        Signature sig = Signature::gatherCache();
        sig.pageSize = pageSize;
        sig.kvType = cache;
        sig.arch = arch;
        set.push_back(sig);
      }
  // Paged GQA decode at Llama-3-8B's shape (32 q heads over 8 kv heads of
  // 128), q_len 1, pages 16 and 64, bf16 and fp8 caches; one
  // speculative-decoding entry (q_len 4, 16-key pages, bf16); and an ALiBi
  // model of MPT-7B's shape (32 / 32, d128, 16-key pages, bf16).
  for (Arch arch : archs) {
    for (DType cache : {DType::BF16, DType::FP8E4M3})
      for (int pageSize : {16, 64}) {
        if (cache == DType::FP8E4M3 && arch == Arch::GFX90A)
          continue;
        Signature sig = Signature::pagedDecode();
        sig.pageSize = pageSize;
        sig.kvType = cache;
        sig.arch = arch;
        set.push_back(sig);
      }
    Signature multiToken = Signature::pagedDecode();
    multiToken.qLen = 4;
    multiToken.arch = arch;
    set.push_back(multiToken);
    Signature mpt = Signature::pagedDecode();
    mpt.numKVHeads = 32;
    mpt.alibi = true;
    mpt.arch = arch;
    set.push_back(mpt);
  }
  return set;
}

static Status writeFile(const fs::path &path, const std::string &bytes) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      return Status(StatusCode::InvalidArgument,
                    "cannot write bundle file " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return Status(StatusCode::InvalidArgument,
                  "cannot publish bundle file " + path.string() + ": " +
                      ec.message());
  return Status::ok();
}

Status buildBundle(Runtime &runtime, const std::vector<Signature> &signatures,
                   const std::string &dir, int jobs,
                   const std::function<void(const BundleProgress &)> &onProgress) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status(StatusCode::InvalidArgument,
                  "cannot create bundle directory " + dir + ": " + ec.message());

  std::vector<CodeObject> objects(signatures.size());
  std::vector<Status> results(signatures.size());
  std::atomic<bool> failed{false};
  std::mutex progressMutex;
  int done = 0;
  parallelFor(signatures.size(), jobs, [&](size_t i) {
    if (failed)
      return; // the build stops at its first failure
    auto start = std::chrono::steady_clock::now();
    results[i] = runtime.compile(signatures[i], objects[i]);
    if (!results[i].isOk())
      failed = true;
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    std::lock_guard<std::mutex> lock(progressMutex);
    BundleProgress progress{++done, static_cast<int>(signatures.size()),
                            &signatures[i], took.count(), results[i]};
    if (onProgress)
      onProgress(progress);
  });

  BundleManifest manifest;
  manifest.producer = bundleProducer();
  for (size_t i = 0; i < signatures.size(); ++i) {
    if (!results[i].isOk())
      return Status(results[i].code(), signatures[i].canonical() + ": " +
                                           results[i].message());
    BundleKernelRecord record;
    record.signature = signatures[i];
    record.code = std::move(objects[i]);
    std::string binary = std::move(record.code.binary);
    record.code.binary.clear();
    record.file =
        record.code.cacheKey + (isAMD(record.code.arch) ? ".hsaco" : ".cubin");
    record.size = binary.size();
    record.checksum = hash128(binary).hex();
    if (Status s = writeFile(fs::path(dir) / record.file, binary); !s)
      return s;
    manifest.kernels.push_back(std::move(record));
  }
  // Written last: a bundle whose build failed half-way has no manifest.
  return writeFile(fs::path(dir) / "manifest.json",
                   encodeBundleManifest(manifest));
}

} // namespace mlagen
