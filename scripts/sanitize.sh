#!/usr/bin/env bash
# The unit tests (runtime, caches, bundles, C API) built with clang-22 under
# AddressSanitizer and UndefinedBehaviorSanitizer (-DMLAGEN_SANITIZE=ON) in
# the build directory it shares with scripts/fuzz-smoke.sh, and run once.
# Only mlagen's code is instrumented; the compilers the tests drive (NVRTC,
# clang) run as they are.
#   MLAGEN_SANITIZE_BUILD_DIR (default build-sanitize); arguments go to Catch2.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/sanitized-build.sh"
ninja -C "$build" mlagen-unit-tests mlagen-cache-worker

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "== unit tests under ASan + UBSan"
"$build/test/mlagen-unit-tests" "$@"
