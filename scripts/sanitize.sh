#!/usr/bin/env bash
# The unit tests (runtime, caches, bundles, C API) built with clang-22 under
# AddressSanitizer and UndefinedBehaviorSanitizer, in a build directory of
# their own (-DMLAGEN_SANITIZE=ON), and run once. Only mlagen's code is
# instrumented; the compilers they drive (NVRTC, clang) run as they are.
#   MLAGEN_SANITIZE_BUILD_DIR (default build-asan); arguments go to Catch2.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_SANITIZE_BUILD_DIR:-$root/build-asan}"
"$root/scripts/install-deps.sh"
CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -g -DNDEBUG" -DMLAGEN_SANITIZE=ON >/dev/null
ninja -C "$build" mlagen-unit-tests mlagen-cache-worker

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "== unit tests under ASan + UBSan"
"$build/test/mlagen-unit-tests" "$@"
