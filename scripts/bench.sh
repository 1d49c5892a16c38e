#!/usr/bin/env bash
# Runs the benchmark (bench/: main.cc and one file per run, listed in bench/bench.h) against
# the embedded MongoDB-wire server, or against TXN_RECOVERY_TEST_URI when set: txn-recoveryd
# sweep vs the applications' own step-by-step recovery loop vs the server's bulk-write limit,
# on the same data, the writes per recovered transaction, idle sweeps over terminal
# transactions and dry-run sweeps; on request, sweeps at once (--fleet), a fleet of
# `txn-recoveryd run` daemons (--fleet-run), a member's take-over (--takeover), and the
# first hour's `propose` over N finished transactions and `rehearse` (--propose N):
# docs/benchmarks.md.
#
# Usage: scripts/bench.sh [txn-recovery-bench options]
#   default: --n 100000 --idle 10000,1000000 --dry-run-n 10000,1000000
#            --writes-n 10000 --baseline-budget 300
# Any option given replaces the defaults (see build/bench/txn-recovery-bench --help).
# The server's CPU time is measured for the embedded server started here; for a server
# given in TXN_RECOVERY_TEST_URI, set TXN_RECOVERY_TEST_STATE_DIR to its state directory
# (DocumentDB: .cache/documentdb/run of the tree that started it) or pass
# --server-state-dir. The URI stays in the environment: never put it in argv.
# Not part of the test suite: it runs for tens of minutes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"

"$root/scripts/deps.sh"
# The build scripts/build.sh makes (Release), when it has not been configured yet.
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target txn-recoveryd txn-recovery-bench

args=("$@")
if ((${#args[@]} == 0)); then
  args=(--n 100000 --idle 10000,1000000 --dry-run-n 10000,1000000 --writes-n 10000
        --baseline-budget 300)
fi

state_dir="${TXN_RECOVERY_TEST_STATE_DIR:-}"
if [[ -z "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  state_dir="$root/.cache/testdb/bench"
  TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir")"
  trap '"$root/scripts/testdb-stop.sh" --state-dir "$state_dir" >/dev/null' EXIT
  export TXN_RECOVERY_TEST_URI
fi
if [[ -n "$state_dir" && " ${args[*]} " != *" --server-state-dir "* ]]; then
  args+=(--server-state-dir "$state_dir")
fi
echo "== txn-recovery-bench ${args[*]}"
"$build/bench/txn-recovery-bench" "${args[@]}"
