#!/usr/bin/env bash
# usage: bench/probes/build-alt.sh NAME [PATCH ...]
# Builds libmlagen.so with the patches applied into carry/alt/NAME (for
# ab.sh), then takes the patches back out of the tree. Patches apply in order
# (git apply, so a failed one changes nothing) and leave no .orig files under
# templates/, which the template glob would embed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${MLAGEN_BUILD_DIR:-$root/build}"
name=$1
shift
cd "$root"
applied=()
restore() {
  for ((i = ${#applied[@]} - 1; i >= 0; --i)); do git apply -R "${applied[i]}"; done
}
trap restore EXIT
for patch in "$@"; do
  git apply "$patch"
  applied+=("$patch")
done
ninja -C "$build" libmlagen.so >/dev/null
mkdir -p "carry/alt/$name"
cp "$build/lib/libmlagen.so" "carry/alt/$name/"
echo "carry/alt/$name/libmlagen.so: ${*:-(the tree as it is)}"
