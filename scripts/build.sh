#!/usr/bin/env bash
# Configures and builds the tree for development: warnings are errors here (and in CI, which
# builds through this script), while a plain `cmake` build leaves them warnings.
# Usage: scripts/build.sh [--sanitize] [--no-werror] [BUILD_DIR]
# --sanitize builds with AddressSanitizer + UndefinedBehaviorSanitizer (default dir build-asan).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=OFF
werror=ON
build_dir=""
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=ON ;;
    --no-werror) werror=OFF ;;
    *) build_dir="$arg" ;;
  esac
done
if [[ -z "$build_dir" ]]; then
  if [[ "$sanitize" == ON ]]; then build_dir="$root/build-asan"; else build_dir="$root/build"; fi
fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTXN_RECOVERY_SANITIZE="$sanitize" -DTXN_RECOVERY_WERROR="$werror" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
