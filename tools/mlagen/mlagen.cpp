//===- mlagen.cpp - build kernels ahead of time into a bundle -------------===//
//
//   mlagen [variants.mlir] [--arch=gfx942,gfx950,sm_90a] [-o mlagen-bundle]
//          [--variant="prefill qk=192 v=128 ..."]... [--print-source] [-j N]
//          [--compiler=auto|nvrtc|hiprtc|clang] [--portable-target=sm_100]
//   mlagen cache list|verify|prune [--dir=D] [--remove] [--max-size=BYTES]
//
// With no variants file and no --variant, builds the default variant set.
// `cache` works on the JIT cache (mlagen/Runtime/CacheAdmin.h).
//
//===----------------------------------------------------------------------===//
#include "mlagen/Bundle/Bundle.h"
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/CacheAdmin.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <ctime>
#include <thread>
#include <unistd.h>

using namespace llvm;

static cl::opt<std::string> variantFile(cl::Positional, cl::init(""),
                                        cl::desc("[variants.mlir]"));
static cl::list<std::string>
    archList("arch", cl::CommaSeparated,
             cl::desc("Targets (default gfx942,gfx950,sm_90a); used for the "
                      "default set and for variants that name no arch"));
static cl::list<std::string>
    variants("variant", cl::desc("A signature in canonical text; repeatable"));
static cl::opt<std::string> outputDir("o", cl::init("mlagen-bundle"),
                                      cl::desc("Bundle directory"));
static cl::opt<bool> printSource("print-source",
                                 cl::desc("Print generated source, no compile"));
static cl::opt<std::string> portableTarget(
    "portable-target", cl::init(""),
    cl::desc("What the sm_80 kernels are compiled for (default sm_80, whose "
             "cubins run on every 8.x GPU; sm_90, sm_100, sm_120 ... for "
             "later GPUs, which run no sm_80 SASS)"));
static cl::opt<mlagen::CompilerKind> compiler(
    "compiler", cl::init(mlagen::CompilerKind::Auto),
    cl::desc("Device compiler"),
    cl::values(clEnumValN(mlagen::CompilerKind::Auto, "auto",
                          "NVRTC for sm_*, hiprtc for gfx90a, clang-22 for "
                          "gfx942/gfx950"),
               clEnumValN(mlagen::CompilerKind::NVRTC, "nvrtc", "NVRTC"),
               clEnumValN(mlagen::CompilerKind::Hiprtc, "hiprtc",
                          "ROCm's hiprtc"),
               clEnumValN(mlagen::CompilerKind::Clang, "clang", "clang-22")));
static cl::opt<unsigned> jobs("j", cl::init(0),
                              cl::desc("Parallel compiles (0: cores)"));

static cl::SubCommand cacheCommand(
    "cache", "List, verify or prune the JIT kernel cache:\n"
             "  list    entries: key, arch, size, last use, signature\n"
             "  verify  check every entry's checksum and key\n"
             "  prune   remove corrupt entries and stale temp/lock/index "
             "files, then\n          least recently used entries down to "
             "--max-size");
static cl::opt<std::string> cacheAction(cl::Positional, cl::Required,
                                        cl::sub(cacheCommand),
                                        cl::desc("list|verify|prune"));
static cl::opt<std::string>
    cacheDir("dir", cl::sub(cacheCommand),
             cl::desc("Cache root (default: $MLAGEN_CACHE_DIR, "
                      "$XDG_CACHE_HOME/mlagen or ~/.cache/mlagen)"));
static cl::opt<bool> removeCorrupt(
    "remove", cl::sub(cacheCommand),
    cl::desc("verify: remove corrupt entries and stale files"));
static cl::opt<std::string>
    maxSize("max-size", cl::sub(cacheCommand),
            cl::desc("prune: keep at most this many bytes of entries "
                     "(suffixes K, M, G: powers of 1024)"));

static int fail(const mlagen::Status &status) {
  errs() << "mlagen: error: " << status.toString() << "\n";
  return 1;
}

// "1048576", "512K", "100M", "2G".
static bool parseByteCount(StringRef text, uint64_t &out) {
  uint64_t unit = 1;
  if (!text.empty())
    switch (llvm::toUpper(text.back())) {
    case 'K': unit = 1ull << 10; break;
    case 'M': unit = 1ull << 20; break;
    case 'G': unit = 1ull << 30; break;
    }
  if (unit != 1)
    text = text.drop_back();
  uint64_t value;
  if (text.getAsInteger(10, value) || value > UINT64_MAX / unit)
    return false;
  out = value * unit;
  return true;
}

static std::string formatTime(int64_t seconds) {
  std::time_t time = static_cast<std::time_t>(seconds);
  std::tm local;
  char text[32];
  if (!localtime_r(&time, &local) ||
      !std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local))
    return "?";
  return text;
}

static int runCacheCommand() {
  std::string root = mlagen::resolveCacheRoot(cacheDir);
  if (cacheAction == "list" || (cacheAction == "verify" && !removeCorrupt)) {
    mlagen::CacheScan scan;
    if (mlagen::Status s = mlagen::scanCache(root, scan); !s)
      return fail(s);
    size_t corrupt = 0;
    for (const mlagen::CachedKernelInfo &entry : scan.entries) {
      corrupt += !entry.intact;
      if (cacheAction == "list")
        outs() << entry.key << "  "
               << (entry.intact ? mlagen::archName(entry.arch) : "?") << "  "
               << entry.sizeBytes << "  " << formatTime(entry.lastUse)
               << "  "
               << (entry.intact ? entry.signature : "CORRUPT: " + entry.problem)
               << "\n";
      else if (!entry.intact)
        outs() << "corrupt: " << entry.path << ": " << entry.problem << "\n";
    }
    for (const std::string &path : scan.staleFiles)
      if (cacheAction == "verify")
        outs() << "stale: " << path << "\n";
    outs() << scan.entries.size() << " entries, " << scan.entryBytes
           << " bytes, " << corrupt << " corrupt, " << scan.staleFiles.size()
           << " stale files in " << scan.directory << "\n";
    // verify fails while a corrupt entry is left.
    return cacheAction == "verify" && corrupt ? 1 : 0;
  }
  if (cacheAction != "verify" && cacheAction != "prune")
    return fail({mlagen::StatusCode::InvalidArgument,
                 "unknown cache action '" + cacheAction +
                     "' (expected list, verify or prune)"});
  mlagen::CacheCleanOptions options;
  if (cacheAction == "prune" && !maxSize.empty()) {
    uint64_t bytes;
    if (!parseByteCount(maxSize, bytes))
      return fail({mlagen::StatusCode::InvalidArgument,
                   "--max-size=" + maxSize +
                       " is not a byte count (e.g. 1048576, 512K, 100M, 2G)"});
    options.maxBytes = bytes;
  }
  mlagen::CacheCleanReport report;
  mlagen::Status status = mlagen::cleanCache(root, options, report);
  for (const std::string &path : report.removedEntries)
    outs() << "removed " << path << "\n";
  for (const std::string &path : report.removedFiles)
    outs() << "removed " << path << "\n";
  outs() << "removed " << report.removedEntries.size() << " entries ("
         << report.bytesFreed << " bytes) and " << report.removedFiles.size()
         << " stale files; " << report.entryBytesLeft
         << " bytes of entries left\n";
  return status ? 0 : fail(status);
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "mlagen ahead-of-time kernel builder\n");
  if (cacheCommand)
    return runCacheCommand();

  std::vector<mlagen::Arch> archs;
  for (const std::string &name : archList.empty()
                                     ? std::vector<std::string>{"gfx942", "gfx950", "sm_90a"}
                                     : std::vector<std::string>(archList.begin(), archList.end())) {
    mlagen::Arch arch;
    if (!mlagen::parseArch(name, arch))
      return fail({mlagen::StatusCode::InvalidSignature,
                   "unknown arch '" + name + "' (known: gfx90a, gfx942, gfx950, sm_80, sm_90a)"});
    archs.push_back(arch);
  }

  std::vector<mlagen::Signature> signatures;
  if (!variantFile.empty())
    if (mlagen::Status s = mlagen::loadVariantFile(variantFile, archs, signatures); !s)
      return fail(s);
  for (const std::string &text : variants) {
    mlagen::Signature sig;
    if (mlagen::Status s = mlagen::parseSignature(text, sig); !s)
      return fail(s);
    signatures.push_back(sig);
  }
  if (signatures.empty())
    signatures = mlagen::defaultVariantSet(archs);
  if (!portableTarget.empty() &&
      std::none_of(signatures.begin(), signatures.end(),
                   [](const mlagen::Signature &sig) { return sig.arch == mlagen::Arch::SM80; }))
    return fail({mlagen::StatusCode::InvalidArgument,
                 "--portable-target=" + portableTarget +
                     " applies to sm_80 kernels, and none of the " +
                     std::to_string(signatures.size()) + " kernels is one (add --arch=sm_80)"});

  if (printSource) {
    for (const mlagen::Signature &sig : signatures) {
      mlagen::GeneratedKernel kernel;
      if (mlagen::Status s = mlagen::generateHIP(sig, kernel); !s)
        return fail(s);
      outs() << "// " << sig.canonical() << "\n" << kernel.source << "\n";
    }
    return 0;
  }

  mlagen::RuntimeOptions options;
  options.generator = mlagen::createMLIRSourceGenerator();
  options.backend = mlagen::BackendKind::None;
  options.compiler = compiler;
  options.portableNvidiaTarget = portableTarget;
  std::unique_ptr<mlagen::Runtime> runtime;
  if (mlagen::Status s = mlagen::Runtime::create(options, runtime); !s)
    return fail(s);

  bool terminal = isatty(STDERR_FILENO);
  int parallel = jobs ? int(jobs) : int(std::max(1u, std::thread::hardware_concurrency()));
  errs() << "mlagen: building " << signatures.size() << " kernels into "
         << outputDir << "\n";
  mlagen::Status status = mlagen::buildBundle(
      *runtime, signatures, outputDir, parallel,
      [&](const mlagen::BundleProgress &p) {
        errs() << (terminal ? "\r\033[K" : "") << "[" << p.done << "/" << p.total
               << "] " << format("%5.1fs ", p.seconds)
               << p.signature->canonical()
               << (p.status.isOk() ? "" : "  FAILED")
               << (terminal && p.done < p.total ? "" : "\n");
        errs().flush();
      });
  if (!status.isOk())
    return fail(status);
  errs() << "mlagen: wrote " << outputDir << "/manifest.json\n";
  return 0;
}
