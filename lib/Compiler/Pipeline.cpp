//===- Pipeline.cpp - from a Signature to HIP source through MLIR ---------===//
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Dialect/MLA/IR/MLAOps.h"
#include "mlagen/Dialect/MLA/Transforms/Passes.h"
#include "mlagen/Target/HIP/HIPEmitter.h"

#include "DecodeSupport.h"
#include "TargetTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlagen;

// The runtime's enums and the dialect's name the same cases; these switches
// keep them in step (a new case warns here until it is mapped). Towards the
// dialect a value outside the enum, cast from an int by a C caller, gives
// nullopt rather than undefined behaviour.
static std::optional<mla::DType> toMLA(DType type) {
  switch (type) {
  case DType::BF16:
    return mla::DType::BF16;
  case DType::FP16:
    return mla::DType::F16;
  case DType::FP8E4M3:
    return mla::DType::F8E4M3;
  }
  return std::nullopt;
}

static DType fromMLA(mla::DType type) {
  switch (type) {
  case mla::DType::BF16:
    return DType::BF16;
  case mla::DType::F16:
    return DType::FP16;
  case mla::DType::F8E4M3:
    return DType::FP8E4M3;
  }
  llvm_unreachable("unknown mla::DType");
}

static std::optional<mla::Arch> toMLA(Arch arch) {
  switch (arch) {
  case Arch::GFX90A:
    return mla::Arch::GFX90A;
  case Arch::GFX942:
    return mla::Arch::GFX942;
  case Arch::GFX950:
    return mla::Arch::GFX950;
  case Arch::SM80:
    return mla::Arch::SM80;
  case Arch::SM90A:
    return mla::Arch::SM90A;
  }
  return std::nullopt;
}

static Arch fromMLA(mla::Arch arch) {
  switch (arch) {
  case mla::Arch::GFX90A:
    return Arch::GFX90A;
  case mla::Arch::GFX942:
    return Arch::GFX942;
  case mla::Arch::GFX950:
    return Arch::GFX950;
  case mla::Arch::SM80:
    return Arch::SM80;
  case mla::Arch::SM90A:
    return Arch::SM90A;
  }
  llvm_unreachable("unknown mla::Arch");
}

static std::optional<mla::Mask> toMLA(Mask mask) {
  switch (mask) {
  case Mask::None:
    return mla::Mask::None;
  case Mask::Causal:
    return mla::Mask::Causal;
  }
  return std::nullopt;
}

static Mask fromMLA(mla::Mask mask) {
  switch (mask) {
  case mla::Mask::None:
    return Mask::None;
  case mla::Mask::Causal:
    return Mask::Causal;
  }
  llvm_unreachable("unknown mla::Mask");
}

static std::optional<mla::KVLayout> toMLA(KVLayout layout) {
  switch (layout) {
  case KVLayout::Varlen:
    return mla::KVLayout::Varlen;
  case KVLayout::Paged:
    return mla::KVLayout::Paged;
  }
  return std::nullopt;
}

OwningOpRef<ModuleOp> mlagen::buildVariantModule(MLIRContext &context,
                                                 const Signature &sig) {
  context.getOrLoadDialect<mla::MLADialect>();
  Location loc = NameLoc::get(StringAttr::get(&context, "signature"));
  std::optional<mla::Mask> mask = toMLA(sig.mask);
  std::optional<mla::DType> qType = toMLA(sig.qType);
  std::optional<mla::DType> kvType = toMLA(sig.kvType);
  std::optional<mla::DType> outType = toMLA(sig.outType);
  std::optional<mla::KVLayout> layout = toMLA(sig.kvLayout);
  std::optional<mla::Arch> arch = toMLA(sig.arch);
  for (auto [field, valid] :
       {std::pair{"op", sig.op == OpKind::Prefill || sig.op == OpKind::Decode ||
                            sig.op == OpKind::MergeAttnStates ||
                            sig.op == OpKind::ExpandPageIndices ||
                            sig.op == OpKind::KVCacheWrite ||
                            sig.op == OpKind::ReshapeAndCache ||
                            sig.op == OpKind::GatherCache ||
                            sig.op == OpKind::PagedDecode},
        {"mask", mask.has_value()},
        {"q_type", qType.has_value()},
        {"kv_type", kvType.has_value()},
        {"out_type", outType.has_value()},
        {"kv_layout", layout.has_value()},
        {"arch", arch.has_value()}}) {
    if (!valid) {
      emitError(loc) << "signature field '" << field
                     << "' holds a value outside its enum";
      return nullptr;
    }
  }
  if (sig.op == OpKind::KVCacheWrite) {
    Signature fixed = Signature::kvCacheWrite();
    fixed.headDimQK = sig.headDimQK;
    fixed.headDimV = sig.headDimV;
    fixed.pageSize = sig.pageSize;
    fixed.kvType = sig.kvType;
    fixed.qType = fixed.outType = sig.qType;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "a kv_cache_write signature sets only qk, v, page, "
                        "in, kv and arch";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    // qk is the cache row: latent (v) + rope. in_type is printed only where
    // it says something: an fp8 cache.
    mla::DTypeAttr inType =
        sig.kvType == DType::FP8E4M3
            ? mla::DTypeAttr::get(&context, *qType)
            : mla::DTypeAttr();
    mla::KVCacheWriteOp::create(
        builder, loc, /*sym_name=*/"kv_cache_write", sig.headDimV,
        sig.headDimQK - sig.headDimV, sig.pageSize,
        mla::ArchAttr::get(&context, *arch), /*launch=*/nullptr, inType,
        *kvType);
    return module;
  }
  if (sig.op == OpKind::ReshapeAndCache) {
    Signature fixed = Signature::reshapeAndCache();
    fixed.numKVHeads = sig.numKVHeads;
    fixed.headDimV = sig.headDimV;
    fixed.pageSize = sig.pageSize;
    fixed.kvType = sig.kvType;
    fixed.qType = fixed.outType = sig.qType;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "a reshape_and_cache signature sets only hkv, v, "
                        "page, in, kv and arch";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    // in_type is printed only where it says something: an fp8 cache.
    mla::DTypeAttr inType =
        sig.kvType == DType::FP8E4M3
            ? mla::DTypeAttr::get(&context, *qType)
            : mla::DTypeAttr();
    mla::ReshapeAndCacheOp::create(
        builder, loc, /*sym_name=*/"reshape_and_cache", sig.numKVHeads,
        sig.headDimV, sig.pageSize, mla::ArchAttr::get(&context, *arch),
        /*launch=*/nullptr, inType, *kvType);
    return module;
  }
  if (sig.op == OpKind::GatherCache) {
    Signature fixed = Signature::gatherCache();
    fixed.numKVHeads = sig.numKVHeads;
    fixed.headDimV = sig.headDimV;
    fixed.pageSize = sig.pageSize;
    fixed.kvType = sig.kvType;
    fixed.qType = fixed.outType = sig.outType;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "a gather_cache signature sets only hkv, v, page, kv, "
                        "out and arch";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    // out_type is printed only where it says something: an fp8 cache.
    mla::DTypeAttr gatheredType =
        sig.kvType == DType::FP8E4M3
            ? mla::DTypeAttr::get(&context, *outType)
            : mla::DTypeAttr();
    mla::GatherCacheOp::create(
        builder, loc, /*sym_name=*/"gather_cache", sig.numKVHeads,
        sig.headDimV, sig.pageSize, mla::ArchAttr::get(&context, *arch),
        /*launch=*/nullptr, *kvType, gatheredType);
    return module;
  }
  if (sig.op == OpKind::PagedDecode) {
    Signature fixed = Signature::pagedDecode();
    fixed.numQHeads = sig.numQHeads;
    fixed.numKVHeads = sig.numKVHeads;
    fixed.headDimQK = fixed.headDimV = sig.headDimV;
    fixed.qLen = sig.qLen;
    fixed.pageSize = sig.pageSize;
    fixed.windowLeft = sig.windowLeft;
    fixed.softCap = sig.softCap;
    fixed.alibi = sig.alibi;
    fixed.returnLSE = sig.returnLSE;
    fixed.qType = sig.qType;
    fixed.kvType = sig.kvType;
    fixed.outType = sig.outType;
    fixed.tileK = sig.tileK;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "a paged_decode signature sets only hq, hkv, v, "
                        "q_len, page, window, softcap, alibi, lse, q, kv, "
                        "out, tile_k and arch (qk equals v)";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    // Written only where they say something: a window, a cap.
    mla::PagedDecodeOp::create(
        builder, loc, /*sym_name=*/"paged_decode", sig.numQHeads,
        sig.numKVHeads, sig.headDimV, sig.qLen, sig.pageSize,
        sig.windowLeft != -1 ? builder.getI32IntegerAttr(sig.windowLeft)
                             : nullptr,
        sig.softCap != 0.0f ? builder.getF32FloatAttr(sig.softCap) : nullptr,
        sig.alibi, sig.returnLSE,
        sig.tileK != 0 ? builder.getI32IntegerAttr(sig.tileK) : nullptr,
        mla::ArchAttr::get(&context, *arch),
        /*launch=*/nullptr, /*reduce_launch=*/nullptr, *qType, *kvType,
        *outType);
    return module;
  }
  if (sig.op == OpKind::ExpandPageIndices) {
    Signature fixed = Signature::expandPageIndices();
    fixed.pageSize = sig.pageSize;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "an expand_page_indices signature sets only page "
                        "and arch";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    mla::ExpandPageIndicesOp::create(
        builder, loc, /*sym_name=*/"expand_page_indices", sig.pageSize,
        mla::ArchAttr::get(&context, *arch), /*launch=*/nullptr);
    return module;
  }
  if (sig.op == OpKind::MergeAttnStates) {
    // The op holds v, hq, lse and out only; the rest must be as
    // Signature::mergeAttnStates() has them.
    Signature fixed = Signature::mergeAttnStates();
    fixed.headDimV = sig.headDimV;
    fixed.numQHeads = sig.numQHeads;
    fixed.returnLSE = sig.returnLSE;
    fixed.qType = fixed.kvType = fixed.outType = sig.outType;
    fixed.arch = sig.arch;
    if (!(fixed == sig)) {
      emitError(loc) << "a merge_attn_states signature sets only v, hq, lse, "
                        "out and arch";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    mla::MergeAttnStatesOp::create(
        builder, loc, /*sym_name=*/"merge_attn_states", sig.headDimV,
        sig.numQHeads, sig.returnLSE, mla::ArchAttr::get(&context, *arch),
        /*launch=*/nullptr, *outType);
    return module;
  }
  if (sig.op == OpKind::Decode) {
    // The op has no field for what decode fixes: one latent kv head, a
    // paged layout, causal, no window, cap or tile_q.
    for (auto [field, fixed] :
         {std::pair{"hkv", sig.numKVHeads == 1},
          {"kv_layout", sig.kvLayout == KVLayout::Paged},
          {"mask", sig.mask == Mask::Causal},
          {"window", sig.windowLeft == -1 && sig.windowRight == -1},
          {"softcap", sig.softCap == 0.0f},
          {"alibi", !sig.alibi}}) {
      if (!fixed) {
        emitError(loc) << "signature field '" << field
                       << "' is not a decode field: a decode signature "
                          "leaves it as Signature::decode() has it";
        return nullptr;
      }
    }
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
    mla::DecodeOp::create(
        builder, loc, /*sym_name=*/"decode", sig.headDimQK, sig.headDimV,
        sig.numQHeads, sig.qLen, sig.pageSize, sig.returnLSE,
        sig.batchInvariant,
        /*tile_k=*/sig.tileK ? builder.getI32IntegerAttr(sig.tileK) : nullptr,
        /*tile_q=*/sig.tileQ ? builder.getI32IntegerAttr(sig.tileQ) : nullptr,
        mla::ArchAttr::get(&context, *arch), /*tiling=*/nullptr,
        /*launch=*/nullptr, /*reduce_launch=*/nullptr, *qType, *kvType,
        *outType);
    return module;
  }
  if (sig.qLen != 0 || sig.pageSize != 0 || sig.batchInvariant ||
      sig.tileK != 0) {
    emitError(loc) << "signature fields 'q_len', 'page', 'batch_invariant' "
                      "and 'tile_k' are decode fields: a prefill signature "
                      "leaves them 0";
    return nullptr;
  }
  // Besides those, the only field the IR cannot hold at all is a window
  // below -1. Every other rule is the verifier's.
  mla::WindowAttr window =
      mla::WindowAttr::getChecked([&] { return emitError(loc); }, &context,
                                  sig.windowLeft, sig.windowRight);
  if (!window)
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  // Written as given: mla-legalize drops an unbounded window and a zero cap.
  mla::PrefillOp::create(
      builder, loc, /*sym_name=*/"prefill", sig.headDimQK, sig.headDimV,
      sig.numQHeads, sig.numKVHeads, *mask, window,
      builder.getF32FloatAttr(sig.softCap), sig.alibi, sig.returnLSE,
      /*tile_q=*/sig.tileQ ? builder.getI32IntegerAttr(sig.tileQ) : nullptr,
      mla::ArchAttr::get(&context, *arch), /*tiling=*/nullptr,
      /*launch=*/nullptr, *qType, *kvType, *outType, *layout);
  return module;
}

/// A Status about the variant `op`, named by its symbol.
static Status variantError(StatusCode code, Operation *op,
                           const llvm::Twine &message) {
  return Status(
      code, ("@" + SymbolTable::getSymbolName(op).getValue() + message).str());
}

/// The Signature of a prefill variant; its arch is the caller's to set.
static Signature signatureOf(mla::PrefillOp op) {
  Signature sig;
  sig.op = OpKind::Prefill;
  sig.headDimQK = op.getQkHeadDim();
  sig.headDimV = op.getVHeadDim();
  sig.numQHeads = op.getQHeads();
  sig.numKVHeads = op.getKvHeads();
  sig.mask = fromMLA(op.getMask());
  sig.windowLeft = op.getWindowLeft();
  sig.windowRight = op.getWindowRight();
  sig.softCap = op.getSoftCapValue();
  sig.alibi = op.getAlibi();
  sig.returnLSE = op.getLse();
  sig.qType = fromMLA(op.getQType());
  sig.kvType = fromMLA(op.getKvType());
  sig.outType = fromMLA(op.getOutType());
  sig.kvLayout = KVLayout::Varlen;
  sig.tileQ = op.getTileQ().value_or(0);
  return sig;
}

static Signature signatureOf(mla::DecodeOp op) {
  Signature sig = Signature::decode();
  sig.headDimQK = op.getQkHeadDim();
  sig.headDimV = op.getVHeadDim();
  sig.numQHeads = op.getQHeads();
  sig.qLen = op.getQLen();
  sig.pageSize = op.getPageSize();
  sig.returnLSE = op.getLse();
  sig.batchInvariant = op.getBatchInvariant();
  sig.qType = fromMLA(op.getQType());
  sig.kvType = fromMLA(op.getKvType());
  sig.outType = fromMLA(op.getOutType());
  sig.tileK = op.getTileK().value_or(0);
  sig.tileQ = op.getTileQ().value_or(0);
  return sig;
}

static Signature signatureOf(mla::MergeAttnStatesOp op) {
  Signature sig = Signature::mergeAttnStates();
  sig.headDimV = op.getHeadDim();
  sig.numQHeads = op.getHeads();
  sig.returnLSE = op.getOutLse();
  sig.qType = sig.kvType = sig.outType = fromMLA(op.getOutType());
  return sig;
}

static Signature signatureOf(mla::ExpandPageIndicesOp op) {
  Signature sig = Signature::expandPageIndices();
  sig.pageSize = op.getPageSize();
  return sig;
}

static Signature signatureOf(mla::KVCacheWriteOp op) {
  Signature sig = Signature::kvCacheWrite();
  sig.headDimQK = op.getLatentDim() + op.getRopeDim();
  sig.headDimV = op.getLatentDim();
  sig.pageSize = op.getPageSize();
  sig.kvType = fromMLA(op.getKvType());
  sig.qType = sig.outType = fromMLA(op.getInputType());
  return sig;
}

static Signature signatureOf(mla::ReshapeAndCacheOp op) {
  Signature sig = Signature::reshapeAndCache();
  sig.numKVHeads = op.getKvHeads();
  sig.headDimV = op.getHeadDim();
  sig.pageSize = op.getPageSize();
  sig.kvType = fromMLA(op.getKvType());
  sig.qType = sig.outType = fromMLA(op.getInputType());
  return sig;
}

static Signature signatureOf(mla::GatherCacheOp op) {
  Signature sig = Signature::gatherCache();
  sig.numKVHeads = op.getKvHeads();
  sig.headDimV = op.getHeadDim();
  sig.pageSize = op.getPageSize();
  sig.kvType = fromMLA(op.getKvType());
  sig.qType = sig.outType = fromMLA(op.getOutputType());
  return sig;
}

static Signature signatureOf(mla::PagedDecodeOp op) {
  Signature sig = Signature::pagedDecode();
  sig.numQHeads = op.getQHeads();
  sig.numKVHeads = op.getKvHeads();
  sig.headDimQK = sig.headDimV = op.getHeadDim();
  sig.qLen = op.getQLen();
  sig.pageSize = op.getPageSize();
  sig.windowLeft = op.getWindowLeft();
  sig.softCap = op.getSoftCapValue();
  sig.alibi = op.getAlibi();
  sig.returnLSE = op.getLse();
  sig.tileK = op.getKeyTile().value_or(0);
  sig.qType = fromMLA(op.getQType());
  sig.kvType = fromMLA(op.getKvType());
  sig.outType = fromMLA(op.getOutType());
  return sig;
}

Status mlagen::signaturesFromModule(ModuleOp module,
                                    std::vector<Signature> &signatures,
                                    llvm::ArrayRef<Arch> defaultArchs) {
  std::vector<Signature> read;
  for (Operation &variant : module.getOps()) {
    Signature sig;
    std::optional<mla::Arch> arch;
    if (auto op = dyn_cast<mla::PrefillOp>(variant)) {
      if (op.getLayout() != mla::KVLayout::Varlen)
        return variantError(StatusCode::Unsupported, op,
                            ": paged prefill is not supported yet");
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::DecodeOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::MergeAttnStatesOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::ExpandPageIndicesOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::KVCacheWriteOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::ReshapeAndCacheOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::GatherCacheOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else if (auto op = dyn_cast<mla::PagedDecodeOp>(variant)) {
      sig = signatureOf(op);
      arch = op.getArch();
    } else {
      continue;
    }
    if (!arch && defaultArchs.empty())
      return variantError(StatusCode::InvalidSignature, &variant,
                          " has no 'arch': a kernel is built for a target");
    if (arch) {
      sig.arch = fromMLA(*arch);
      read.push_back(sig);
      continue;
    }
    for (Arch defaultArch : defaultArchs) {
      sig.arch = defaultArch;
      read.push_back(sig);
    }
  }
  signatures.insert(signatures.end(), read.begin(), read.end());
  return Status::ok();
}

Status mlagen::loadVariantFile(const std::string &path,
                               llvm::ArrayRef<Arch> defaultArchs,
                               std::vector<Signature> &signatures) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<mla::MLADialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << (diagnostics.empty() ? "" : "; ") << diag.getLocation() << ": "
       << diag;
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, &context);
  if (!module)
    return Status(StatusCode::InvalidSignature,
                  diagnostics.empty() ? "cannot read variant file " + path
                                      : diagnostics);
  return signaturesFromModule(*module, signatures, defaultArchs);
}

void mlagen::buildPipeline(OpPassManager &pm, Arch arch) {
  // An arch outside the enum gets a name mla-select-tiling reports as unknown.
  std::optional<mla::Arch> target = toMLA(arch);
  std::string archName = target
                             ? mla::stringifyArch(*target).str()
                             : "arch#" + std::to_string(static_cast<int>(arch));
  pm.addPass(mla::createMLALegalizePass());
  pm.addPass(mla::createMLASelectTilingPass({archName}));
  pm.addPass(mla::createMLAPrepareEmissionPass());
}

Status mlagen::generateHIP(const Signature &sig, GeneratedKernel &kernel) {
  // A context per call: concurrent calls share nothing, and no thread pool
  // is started for a pipeline over one op.
  MLIRContext context(MLIRContext::Threading::DISABLED);
  // The message names the field; the op's generic form would only bury it.
  context.printOpOnDiagnostic(false);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << (diagnostics.empty() ? "" : "; ") << diag;
    for (const Diagnostic &note : diag.getNotes())
      os << " (" << note << ")";
    return success();
  });

  OwningOpRef<ModuleOp> module = buildVariantModule(context, sig);
  if (!module || failed(verify(*module)))
    return Status(StatusCode::InvalidSignature, diagnostics);

  PassManager pm(&context);
  buildPipeline(pm, sig.arch);
  if (failed(pm.run(*module)))
    return Status(StatusCode::Unsupported, diagnostics);

  std::string source;
  llvm::raw_string_ostream os(source);
  if (failed(emitHIP(*module, os)))
    return Status(StatusCode::GeneratorError, diagnostics);
  kernel.source = std::move(source);

  if (auto op = dyn_cast<mla::PagedDecodeOp>(module->getBody()->front())) {
    // The planner's geometry: a block covers rows_per_block rows of one kv
    // head, so grid.y = q_len * hq / rows_per_block (no head padding).
    mla::LaunchAttr launch = op.getLaunchAttr();
    mla::LaunchAttr reduce = op.getReduceLaunchAttr();
    kernel.entryName = launch.getEntry().str();
    kernel.threadsPerBlock = launch.getThreads();
    kernel.sharedBytes = launch.getSharedBytes();
    kernel.tileQ = op.getRowsPerBlock();
    kernel.tileK = op.getTileK();
    kernel.paddedHeads = op.getQHeads();
    // Matrix cores: the launch bounds' blocks (registers for them); the
    // CUDA-core kernel states none.
    kernel.blocksPerSM = op.usesMatrixCores() ? op.getBlocksPerSM() : 0;
    kernel.extraEntries = {{reduce.getEntry().str(), reduce.getThreads(),
                            reduce.getSharedBytes(),
                            mla::PagedDecodeOp::kReduceRowsPerBlock}};
    return Status::ok();
  }
  if (auto op = dyn_cast<mla::GatherCacheOp>(module->getBody()->front())) {
    kernel.entryName = op.getLaunchAttr().getEntry().str();
    kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
    kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
    kernel.tileQ = op.getLaunchAttr().getThreads(); // vectors per block
    return Status::ok();
  }
  if (auto op =
          dyn_cast<mla::ReshapeAndCacheOp>(module->getBody()->front())) {
    kernel.entryName = op.getLaunchAttr().getEntry().str();
    kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
    kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
    kernel.tileQ = op.getLaunchAttr().getThreads(); // vectors per block
    return Status::ok();
  }
  if (auto op = dyn_cast<mla::KVCacheWriteOp>(module->getBody()->front())) {
    kernel.entryName = op.getLaunchAttr().getEntry().str();
    kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
    kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
    kernel.tileQ = op.getLaunchAttr().getThreads(); // vectors per block
    return Status::ok();
  }
  if (auto op =
          dyn_cast<mla::ExpandPageIndicesOp>(module->getBody()->front())) {
    kernel.entryName = op.getLaunchAttr().getEntry().str();
    kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
    kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
    kernel.tileQ = op.getLaunchAttr().getThreads(); // tokens per block
    return Status::ok();
  }
  if (auto op =
          dyn_cast<mla::MergeAttnStatesOp>(module->getBody()->front())) {
    kernel.entryName = op.getLaunchAttr().getEntry().str();
    kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
    kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
    // 16-byte vectors per block: the runtime's grid divisor.
    kernel.tileQ = op.getLaunchAttr().getThreads();
    return Status::ok();
  }
  if (auto op = dyn_cast<mla::DecodeOp>(module->getBody()->front())) {
    mla::LaunchAttr launch = op.getLaunchAttr();
    mla::LaunchAttr reduce = op.getReduceLaunchAttr();
    mla::DecodeTilingAttr tiling = op.getTilingAttr();
    kernel.entryName = launch.getEntry().str();
    kernel.threadsPerBlock = launch.getThreads();
    kernel.sharedBytes = launch.getSharedBytes();
    kernel.tileQ = tiling.getHeadsPerBlock();
    kernel.tileK = tiling.getTileK();
    kernel.paddedHeads = tiling.getHeads();
    kernel.clusterParts = static_cast<int>(mla::getDecodeClusterParts(
        op, tiling, mla::getTargetInfo(*op.getArch())));
    kernel.extraEntries = {{reduce.getEntry().str(), reduce.getThreads(),
                            reduce.getSharedBytes(),
                            op.getReduceRowsPerBlock()}};
    return Status::ok();
  }
  auto op = cast<mla::PrefillOp>(module->getBody()->front());
  kernel.entryName = op.getLaunchAttr().getEntry().str();
  kernel.threadsPerBlock = op.getLaunchAttr().getThreads();
  kernel.sharedBytes = op.getLaunchAttr().getSharedBytes();
  kernel.tileQ = op.getTilingAttr().getTileQ();
  kernel.tileK = op.getTilingAttr().getTileK(); // the tensor maps' box
  return Status::ok();
}
