#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit tests on the in-memory store and
# the same scenarios through libmongoc against a MongoDB-wire server. The embedded server
# (mongo-java-server) is installed and started by the suite itself; set
# TXN_RECOVERY_TEST_URI to run against a real mongod or replica set instead.
#
# Usage: scripts/test.sh [--sanitize]   (ASan/UBSan build in build-asan/)
#        scripts/test.sh [--sanitize] --engine documentdb
# Safe to run again: installs only what is missing, reuses the build.
#
# --engine documentdb runs only the build and the same ctest pass against DocumentDB
# (PostgreSQL with Microsoft's DocumentDB extensions and gateway), started through
# `scripts/testdb-start.sh --engine documentdb` (which builds it the first time) and stopped
# afterwards unless it was already running. It is not part of the default run.
#
# Besides the test build (warnings as errors), it builds the tree once more exactly as a
# user or a distribution would, `cmake -DCMAKE_BUILD_TYPE=Release` and no other option (in
# build-release-check/), and fails on any compiler warning there: -O3 inlines more than the
# test build's -O2, and GCC 12 warns differently (-Wrestrict) at that level.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=""
build_dir="$root/build"
engine=""
while (($# > 0)); do
  case "$1" in
    --sanitize)
      sanitize="--sanitize"
      build_dir="$root/build-asan"
      shift
      ;;
    --engine)
      [[ "${2:-}" == documentdb ]] || { echo "test.sh: --engine takes documentdb" >&2; exit 64; }
      engine=documentdb
      shift 2
      ;;
    *) echo "usage: scripts/test.sh [--sanitize] [--engine documentdb]" >&2; exit 64 ;;
  esac
done

"$root/scripts/deps.sh"
"$root/scripts/build.sh" $sanitize "$build_dir"

if [[ "$engine" == documentdb ]]; then
  echo "== tests against DocumentDB"
  started=0
  if ! "$root/scripts/testdb-documentdb.sh" status >/dev/null 2>&1; then started=1; fi
  uri="$("$root/scripts/testdb-start.sh" --engine documentdb)"
  if ((started)); then
    trap '"$root/scripts/testdb-stop.sh" --engine documentdb' EXIT
  fi
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  # The URI carries the generated password: through the environment, never argv.
  TXN_RECOVERY_TEST_URI="$uri" ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" --timeout 600
  exit
fi

if [[ -z "$sanitize" ]]; then
  echo "== plain Release build (no options), warnings counted"
  "$root/scripts/release-build-check.sh" "$root/build-release-check"
fi

echo "== formatting (clang-format)"
mapfile -t sources < <(cd "$root" && git ls-files '*.cc' '*.h' 2>/dev/null || true)
if ((${#sources[@]})); then
  (cd "$root" && clang-format --dry-run -Werror "${sources[@]}")
fi

# The formal model of the recovery protocol (model/README.md): every configuration of
# scripts/model-check.sh, clean where expected, each seeded bug found. Nothing in it is
# compiled with the project's flags, so the sanitizer run leaves it out.
if [[ -z "$sanitize" ]]; then
  MODEL_CHECK_DIR="$build_dir/model-check" "$root/scripts/model-check.sh"
fi

echo "== tests"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" --timeout 600
