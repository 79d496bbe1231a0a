//===- Status.cpp - error codes and messages of the runtime API -----------===//

#include "mlagen/Runtime/Status.h"

namespace mlagen {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "Ok";
  case StatusCode::InvalidSignature:
    return "InvalidSignature";
  case StatusCode::InvalidArgument:
    return "InvalidArgument";
  case StatusCode::Unsupported:
    return "Unsupported";
  case StatusCode::NoBackend:
    return "NoBackend";
  case StatusCode::CompileError:
    return "CompileError";
  case StatusCode::DriverError:
    return "DriverError";
  case StatusCode::CacheError:
    return "CacheError";
  case StatusCode::GeneratorError:
    return "GeneratorError";
  case StatusCode::Internal:
    return "Internal";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "Ok";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

} // namespace mlagen
