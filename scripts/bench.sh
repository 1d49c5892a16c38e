#!/usr/bin/env bash
# Runs the benchmark (bench/bench.cc) against the embedded MongoDB-wire server, or against
# TXN_RECOVERY_TEST_URI when set: txn-recoveryd sweep vs the seeds' step-by-step loop vs
# the server's bulk-write limit, on the same data, plus idle and dry-run sweeps.
#
# Usage: scripts/bench.sh [txn-recovery-bench options]
#   default: --n 1000,10000,100000 --idle 10000,1000000 --dry-run-n 10000,1000000
#            --baseline-budget 600
# Any option given replaces the defaults (see build/bench/txn-recovery-bench --help).
# Not part of the test suite: at N = 100,000 it runs for hours on the embedded server.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"

"$root/scripts/deps.sh"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target txn-recoveryd txn-recovery-bench

args=("$@")
if ((${#args[@]} == 0)); then
  args=(--n 1000,10000,100000 --idle 10000,1000000 --dry-run-n 10000,1000000
        --baseline-budget 600)
fi

if [[ -z "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  state_dir="$root/.cache/testdb/bench"
  TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir")"
  trap '"$root/scripts/testdb-stop.sh" --state-dir "$state_dir" >/dev/null' EXIT
  export TXN_RECOVERY_TEST_URI
fi
echo "== txn-recovery-bench ${args[*]}"
"$build/bench/txn-recovery-bench" "${args[@]}"
