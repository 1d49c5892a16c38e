#!/usr/bin/env bash
# Configures and builds the tree for development: a Release build whose warnings are errors
# here (and in CI, which builds through this script), while a plain `cmake` build leaves
# them warnings.
# Usage: scripts/build.sh [--sanitize] [--no-werror] [--target T]... [BUILD_DIR]
# --sanitize builds with AddressSanitizer + UndefinedBehaviorSanitizer (default dir build-asan).
# --target T (repeatable) builds only T and what it needs (scripts/demo.sh: the daemon and
# the workload tool, not the tests); without it, every target.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=OFF
werror=ON
build_dir=""
targets=()
while (($# > 0)); do
  case "$1" in
    --sanitize) sanitize=ON ;;
    --no-werror) werror=OFF ;;
    --target)
      [[ -n "${2:-}" ]] || { echo "build.sh: --target takes a target name" >&2; exit 64; }
      targets+=(--target "$2")
      shift
      ;;
    *) build_dir="$1" ;;
  esac
  shift
done
if [[ -z "$build_dir" ]]; then
  if [[ "$sanitize" == ON ]]; then build_dir="$root/build-asan"; else build_dir="$root/build"; fi
fi
# ccache (when installed) makes a rebuild in a fresh clone, CI's, or in a second work tree
# cost only the files that changed: paths under the checkout are hashed relative to it.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Release: the build a user or a distribution makes (`cmake -DCMAKE_BUILD_TYPE=Release`),
# plus -Werror, so that a warning only -O3 shows (GCC 12's -Wrestrict) fails here and CI
# compiles the tree once, not a second time to look for such warnings. The sanitizers'
# build keeps its debug information, which their reports need.
build_type=Release
[[ "$sanitize" == OFF ]] || build_type=RelWithDebInfo
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${launcher[@]}" \
  -DTXN_RECOVERY_SANITIZE="$sanitize" -DTXN_RECOVERY_WERROR="$werror" >/dev/null
cmake --build "$build_dir" -j"$(nproc)" ${targets[@]+"${targets[@]}"}
