#!/usr/bin/env bash
# Copies what the GPU machine needs (it has no LLVM/MLIR) into carry/, which
# git ignores: the device tool's `carry` argument takes it along.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_BUILD_DIR:-$root/build}"
mkdir -p "$root/carry"
cp "$build/lib/libmlagen.so" "$build/bin/mlagen" \
   "$build/test/mlagen-gpu-launch-tests" "$build/test/mlagen-gpu-prefill-tests" \
   "$build/test/mlagen-gpu-decode-tests" \
   "$build/test/mlagen-gpu-elementwise-tests" \
   "$build/bench/host/mlagen-host-bench" \
   "$root/carry/"
du -sh "$root/carry"
