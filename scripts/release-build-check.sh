#!/usr/bin/env bash
# Builds the tree as a user or a distribution does, `cmake -DCMAKE_BUILD_TYPE=Release` with
# no other option (warnings are not errors there), and fails if the compiler printed a
# single warning. scripts/test.sh runs it, so that a warning only an optimised build shows
# (GCC 12's -Wrestrict at -O3) cannot come back unseen.
# Usage: scripts/release-build-check.sh [BUILD_DIR]   (default build-release-check/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$root/build-release-check}"
log="$(mktemp)"
# Through ccache when it is there, as scripts/build.sh: CMake takes the launcher from the
# environment (CMAKE_CXX_COMPILER_LAUNCHER) when it first configures, so the command line
# stays the user's own, and ccache replays the warnings of a cached compile.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
fi
trap 'rm -f "$log"' EXIT
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$build_dir" -j"$(nproc)" >"$log" 2>&1; then
  cat "$log"
  echo "release-build-check: the plain Release build failed" >&2
  exit 1
fi
# Ninja prints each command's output right after its "[n/m] Building CXX object X" line.
warned=$(awk '/Building CXX object/ {obj=$5} /warning:/ && obj {print obj}' "$log" | sort -u)
if [[ -n "$warned" ]]; then
  grep -E 'warning:|Building CXX object' "$log" | grep -B1 'warning:' >&2 || true
  # Without -Werror the objects were produced: remove them so that the next run compiles
  # (and reports) them again instead of passing on an up-to-date build.
  for obj in $warned; do rm -f "$build_dir/$obj"; done
  echo "release-build-check: compiler warnings in a plain Release build:" $warned >&2
  exit 1
fi
echo "release-build-check: plain Release build ($build_dir), no warnings"
