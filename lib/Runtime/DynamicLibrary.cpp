//===- DynamicLibrary.cpp - GPU libraries found at run time ---------------===//

#include "DynamicLibrary.h"

#include <dlfcn.h>

namespace mlagen {

Status DynamicLibrary::open(std::initializer_list<const char *> candidates,
                            DynamicLibrary &out) {
  std::string tried, loadErrors;
  for (const char *candidate : candidates) {
    // RTLD_LOCAL: the driver's symbols must not interpose on the host's.
    if (void *handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL)) {
      out.handle_ = handle;
      out.path_ = candidate;
      return Status::ok();
    }
    // A library that exists but fails to load (a missing dependency, a
    // wrong architecture) deserves its loader message; absence does not.
    std::string error = dlerror();
    if (error.find("No such file") == std::string::npos)
      loadErrors += "; " + error;
    if (candidate != *candidates.begin())
      tried += std::string(tried.empty() ? "" : ", ") + candidate;
  }
  std::string message = std::string(*candidates.begin()) + " not found";
  if (!tried.empty())
    message += " (also tried " + tried + ")";
  return Status(StatusCode::NoBackend, message + loadErrors);
}

void *DynamicLibrary::lookup(const char *name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

} // namespace mlagen
