//===- PrefillSupport.cpp - what the prefill template implements ----------===//
#include "PrefillSupport.h"

using namespace mlir;
using namespace mlagen::mla;

LogicalResult mlagen::mla::checkPrefillSupported(PrefillOp op) {
  for (auto [field, type] :
       {std::pair{"q_type", op.getQType()}, {"kv_type", op.getKvType()}})
    if (type == DType::F8E4M3)
      return op.emitOpError() << "fp8 prefill is not supported yet ('" << field
                              << "' is f8E4M3)";
  if (op.getKvType() != op.getQType())
    return op.emitOpError() << "'kv_type' (" << stringifyDType(op.getKvType())
                            << ") must equal 'q_type' ("
                            << stringifyDType(op.getQType()) << ") for prefill";
  if (op.getOutType() != op.getQType())
    return op.emitOpError()
           << "'out_type' (" << stringifyDType(op.getOutType())
           << ") must equal 'q_type' (" << stringifyDType(op.getQType())
           << "): other output types are not supported yet";
  if (op.getLayout() != KVLayout::Varlen)
    return op.emitOpError() << "'layout' " << stringifyKVLayout(op.getLayout())
                            << " is not supported for prefill yet, only varlen";
  return success();
}
