#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang-22 (ASan + UBSan +
# coverage, in the build directory shared with scripts/sanitize.sh) and runs
# each for a bounded time from the seed corpus in fuzz/corpus/. New inputs
# go to the build directory, not to the committed seeds; a crash leaves its
# input under $build/artifacts/ and fails the script.
#   MLAGEN_FUZZ_SECONDS (default 20) per target, MLAGEN_SANITIZE_BUILD_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/sanitized-build.sh"
seconds="${MLAGEN_FUZZ_SECONDS:-20}"
ninja -C "$build" mlagen-fuzzers

mkdir -p "$build/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
for target in signature cache-entry bundle-manifest variant; do
  work="$build/corpus/$target"
  mkdir -p "$work"
  echo "== fuzz $target for ${seconds}s"
  "$build/fuzz/mlagen-fuzz-$target" "$work" "$root/fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$target-" 2>"$build/fuzz-$target.log" \
    || { tail -60 "$build/fuzz-$target.log"; echo "fuzz-smoke: $target FAILED"; exit 1; }
  grep -E "^stat::number_of_executed_runs|^#[0-9]+.*DONE" "$build/fuzz-$target.log" | tail -2
done
echo "fuzz-smoke: all targets ran ${seconds}s without a finding"
