//===- CatchStatus.h - print a Status in Catch2 failures -------*- C++ -*-===//
#ifndef MLAGEN_TEST_COMMON_CATCHSTATUS_H
#define MLAGEN_TEST_COMMON_CATCHSTATUS_H

#include "mlagen/Runtime/Status.h"

#include <catch2/catch.hpp>

namespace Catch {
template <> struct StringMaker<mlagen::Status> {
  static std::string convert(const mlagen::Status &status) {
    return status.toString();
  }
};
} // namespace Catch

#endif // MLAGEN_TEST_COMMON_CATCHSTATUS_H
