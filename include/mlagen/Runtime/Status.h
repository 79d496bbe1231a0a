//===- Status.h - error codes and messages of the runtime API ---*- C++ -*-===//
//
// Every public entry point of the runtime returns a Status: a code a program
// can branch on and a message a person can read, naming the field or the
// file at fault. The runtime never throws and never aborts on bad input.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_STATUS_H
#define MLAGEN_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace mlagen {

// Stable numbers: the C API returns them as ints.
enum class StatusCode : int {
  Ok = 0,
  InvalidSignature = 1,  // a field of a Signature breaks a rule
  InvalidArgument = 2,   // a launch argument (pointer, shape, stride) is bad
  Unsupported = 3,       // valid, but this build/compiler/arch cannot do it
  NoBackend = 4,         // no GPU driver or compiler was found at run time
  CompileError = 5,      // the device compiler rejected the source
  DriverError = 6,       // the GPU driver failed (load, launch, memory)
  CacheError = 7,        // the on-disk cache is unusable (reported, not fatal)
  GeneratorError = 8,    // the source generator failed
  Internal = 9,
};

const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  // "InvalidSignature: head_dim_qk must be a multiple of 16 (got 100)"
  std::string toString() const;

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

} // namespace mlagen

#endif // MLAGEN_RUNTIME_STATUS_H
