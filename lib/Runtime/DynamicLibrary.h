//===- DynamicLibrary.h - GPU libraries found at run time ------*- C++ -*-===//
//
// The runtime links no GPU library: it dlopens the driver and the compilers
// it finds, so one binary runs on a CPU-only machine, an NVIDIA box and a
// ROCm box. Libraries are never closed: drivers and compilers keep threads
// and atexit handlers that must not outlive their code.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DYNAMICLIBRARY_H
#define MLAGEN_LIB_RUNTIME_DYNAMICLIBRARY_H

#include "mlagen/Runtime/Status.h"

#include <initializer_list>
#include <string>

namespace mlagen {

class DynamicLibrary {
public:
  // Opens the first candidate that loads. On failure: NoBackend, "libX not
  // found" naming the first candidate (and the others tried).
  static Status open(std::initializer_list<const char *> candidates,
                     DynamicLibrary &out);

  // Binds `fn` to the symbol `name`; NoBackend naming the library if missing.
  template <typename Fn> Status bind(const char *name, Fn &fn) const {
    void *symbol = lookup(name);
    fn = reinterpret_cast<Fn>(symbol);
    if (!symbol)
      return Status(StatusCode::NoBackend,
                    path_ + " has no symbol " + std::string(name));
    return Status::ok();
  }

  void *lookup(const char *name) const;
  const std::string &path() const { return path_; }

private:
  void *handle_ = nullptr;
  std::string path_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DYNAMICLIBRARY_H
