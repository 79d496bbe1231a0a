#!/usr/bin/env bash
# Fresh machine to first result: set up, build, and run `mlagen` on its
# built-in default variant set (AOT bundle for gfx942, gfx950 and sm_90a).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MLAGEN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
exec "$build/bin/mlagen" "$@"
