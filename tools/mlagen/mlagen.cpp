//===- mlagen.cpp - build kernels ahead of time into a bundle -------------===//
//
//   mlagen [variants.mlir] [--arch=gfx942,gfx950,sm_90a] [-o mlagen-bundle]
//          [--variant="prefill qk=192 v=128 ..."]... [--print-source] [-j N]
//          [--compiler=auto|nvrtc|hiprtc|clang]
//
// With no variants file and no --variant, builds the default variant set.
//
//===----------------------------------------------------------------------===//
#include "mlagen/Bundle/Bundle.h"
#include "mlagen/Compiler/Pipeline.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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

static int fail(const mlagen::Status &status) {
  errs() << "mlagen: error: " << status.toString() << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "mlagen ahead-of-time kernel builder\n");

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
