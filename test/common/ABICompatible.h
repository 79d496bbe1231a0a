//===- ABICompatible.h - compare hand declarations with headers -*- C++ -*-===//
//
// DriverAPI.h declares driver functions with ints and void pointers where
// the real headers have enums and typed handles. Two function types are
// ABI-compatible when they have the same arity and each return and
// parameter type has the same size and class (pointer, float, integer).
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_ABICOMPATIBLE_H
#define MLAGEN_TEST_COMMON_ABICOMPATIBLE_H

#include <type_traits>

namespace mlagen::test {

template <typename A, typename B>
constexpr bool sameClass =
    sizeof(A) == sizeof(B) && std::is_pointer_v<A> == std::is_pointer_v<B> &&
    std::is_floating_point_v<A> == std::is_floating_point_v<B>;

template <typename A, typename B> struct ABICompatible : std::false_type {};

template <typename R1, typename... A1, typename R2, typename... A2>
struct ABICompatible<R1 (*)(A1...), R2 (*)(A2...)> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A1) != sizeof...(A2))
      return false;
    else
      return sameClass<R1, R2> && (sameClass<A1, A2> && ...);
  }();
};

// Function pointer types from both sides; the real one may be noexcept.
template <typename Mine, typename Real>
constexpr bool abiCompatible =
    ABICompatible<Mine, std::add_pointer_t<std::remove_pointer_t<Real>>>::value;

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_ABICOMPATIBLE_H
