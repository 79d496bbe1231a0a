#!/usr/bin/env bash
# Fresh machine to every test: set up, build, run the Catch2 unit tests,
# the GPU numerics tests (they report "skipped: no GPU" without one) and
# the lit suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure "$@"
