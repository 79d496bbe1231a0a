# Sourced by scripts/sanitize.sh and scripts/fuzz-smoke.sh: configures the
# one clang-22 build directory they share (the runtime is compiled once for
# both), instrumented for ASan, UBSan and libFuzzer coverage. Sets $build.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
"$root/scripts/install-deps.sh"
# -O1 and line tables: fast enough to build on two cores, and stack traces
# still name file and line.
CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only -DNDEBUG" \
  -DMLAGEN_SANITIZE=ON -DMLAGEN_FUZZ=ON >/dev/null
