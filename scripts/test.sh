#!/usr/bin/env bash
# Fresh machine to every test: set up, build, run the Catch2 unit tests,
# the GPU numerics tests (they report "skipped: no GPU" without one), the
# lit suite and the install check; then, unless MLAGEN_QUICK_TEST=1, the
# unit tests under ASan + UBSan and a short run of each fuzz target (both in
# build-sanitize/, with clang-22).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure "$@"
if [ "${MLAGEN_QUICK_TEST:-0}" != 1 ]; then
  "$root/scripts/sanitize.sh"
  "$root/scripts/fuzz-smoke.sh"
fi
