#!/usr/bin/env bash
# Fuzzes the transaction-document parser and the configuration loader with libFuzzer
# (clang, AddressSanitizer and UndefinedBehaviorSanitizer), starting from the corpus kept in
# tests/fuzz/corpus/<target>/. New inputs that add coverage are merged back into the tree's
# corpus with --merge (review and commit them); crashes are left as crash-* files in the
# work directory and make the script fail.
#
# Usage: scripts/fuzz.sh [--seconds N (per target, default 60)] [--merge] [TARGET...]
#   targets: txn_document config env (default: all three)
# Needs clang-14 and libclang-rt-14-dev (apt-get install clang-14 libclang-rt-14-dev).
# Without clang, `ctest -R fuzz_corpus` still runs every target over the corpus.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build-fuzz}"
seconds=60
merge=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(txn_document config env)

cxx="$(command -v clang++-14 || command -v clang++ || true)"
cc="$(command -v clang-14 || command -v clang || true)"
if [[ -z "$cxx" ]]; then
  echo "fuzz: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DTXN_RECOVERY_FUZZ=ON \
  -DTXN_RECOVERY_SANITIZE=ON -DTXN_RECOVERY_WERROR=OFF >/dev/null
cmake --build "$build_dir" --target "${targets[@]/#/fuzz_}"

work="$build_dir/fuzz-work"
status=0
for t in "${targets[@]}"; do
  corpus="$root/tests/fuzz/corpus/$t"
  scratch="$work/$t"
  mkdir -p "$scratch"
  echo "== fuzz_$t for ${seconds}s (corpus $corpus)"
  # New inputs go to the scratch directory; the tree's corpus is only read.
  if ! (cd "$work" && "$build_dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" \
          -max_len=65536 -timeout=10 -print_final_stats=1 "$scratch" "$corpus"); then
    status=1
    echo "fuzz_$t found a crash: see $work/crash-*" >&2
  fi
  if ((merge)); then
    "$build_dir/tests/fuzz/fuzz_$t" -merge=1 "$corpus" "$scratch"
  fi
done
exit $status
