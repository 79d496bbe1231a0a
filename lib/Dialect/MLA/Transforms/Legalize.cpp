//===- Legalize.cpp - canonical, emittable variants -----------------------===//
#include "DecodeSupport.h"
#include "PrefillSupport.h"

#include "mlagen/Dialect/MLA/Transforms/Passes.h"

namespace mlagen::mla {
#define GEN_PASS_DEF_MLALEGALIZEPASS
#include "mlagen/Dialect/MLA/Transforms/Passes.h.inc"
} // namespace mlagen::mla

using namespace mlir;
using namespace mlagen::mla;

namespace {

/// A causal variant sees no key right of the diagonal, so a right window
/// reaching past it is clipped to 0; (-1, -1) is no window at all.
void canonicalizeWindow(PrefillOp op) {
  WindowAttr window = op.getWindowAttr();
  if (!window)
    return;
  int32_t right = window.getRight();
  if (op.getMask() == Mask::Causal && right > 0)
    right = 0;
  if (window.getLeft() == -1 && right == -1)
    op.removeWindowAttr();
  else if (right != window.getRight())
    op.setWindowAttr(WindowAttr::get(op.getContext(), window.getLeft(), right));
}

/// A soft cap of 0 (or -0) is off: absent.
void canonicalizeSoftCap(PrefillOp op) {
  if (op.getSoftCapAttr() && op.getSoftCapValue() == 0.0f)
    op.removeSoftCapAttr();
}

struct LegalizePass : mlagen::mla::impl::MLALegalizePassBase<LegalizePass> {
  void runOnOperation() override {
    for (PrefillOp op : getOperation().getOps<PrefillOp>()) {
      // Report every unsupported variant of the module, not just the first.
      if (failed(checkPrefillSupported(op))) {
        signalPassFailure();
        continue;
      }
      canonicalizeWindow(op);
      canonicalizeSoftCap(op);
    }
    // A decode variant has no optional field with two spellings.
    for (DecodeOp op : getOperation().getOps<DecodeOp>())
      if (failed(checkDecodeSupported(op)))
        signalPassFailure();
  }
};

} // namespace
