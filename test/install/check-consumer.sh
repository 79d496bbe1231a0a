#!/usr/bin/env bash
# Installs a build into a temporary prefix, builds examples/consumer against
# it with find_package(mlagen), and runs both programs: the C one compiles a
# kernel through libmlagen.so, the C++ one loads it from a bundle that the
# installed `mlagen` wrote. Usage: check-consumer.sh <build dir> <source dir>
set -euo pipefail
build="$1"
source="$2"
work="$(mktemp -d "${TMPDIR:-/tmp}/mlagen-install-XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
sig="prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a"

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/mlagen bin/mlagen-opt bin/mlagen-translate lib/libmlagen.so \
         lib/libMLAGENRuntime.a include/mlagen-c/Runtime.h \
         include/mlagen/Runtime/Runtime.h lib/cmake/mlagen/mlagenConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/examples/consumer" -B "$work/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null

export MLAGEN_CACHE_DIR="$work/cache"
unset MLAGEN_BUNDLE_PATH
"$work/build/mlagen-consumer-c" "$sig" | tee "$work/c.txt"
grep -q "^compiled 'prefill qk=192 .*arch=sm_90a': [0-9]* bytes, ELF$" "$work/c.txt"

"$prefix/bin/mlagen" --variant="$sig" -o "$work/bundle" 2>/dev/null
rm -rf "$MLAGEN_CACHE_DIR"
"$work/build/mlagen-consumer-cpp" "$work/bundle" "$sig" | tee "$work/cpp.txt"
grep -q "^from the bundle: mlagen_prefill, [0-9]* bytes" "$work/cpp.txt"
# The C++ consumer carries no MLIR: the runtime alone is small.
size=$(stat -c %s "$work/build/mlagen-consumer-cpp")
[ "$size" -lt 3000000 ] || { echo "consumer is $size bytes: MLIR linked in?"; exit 1; }
echo "install consumer check: passed"
