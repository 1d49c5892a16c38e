#!/usr/bin/env bash
# Configures and builds the tree. Usage: scripts/build.sh [--sanitize] [BUILD_DIR]
# --sanitize builds with AddressSanitizer + UndefinedBehaviorSanitizer (default dir build-asan).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=OFF
build_dir=""
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=ON ;;
    *) build_dir="$arg" ;;
  esac
done
if [[ -z "$build_dir" ]]; then
  if [[ "$sanitize" == ON ]]; then build_dir="$root/build-asan"; else build_dir="$root/build"; fi
fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTXN_RECOVERY_SANITIZE="$sanitize" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
