#!/usr/bin/env bash
# The long version of the fault-injection suite (issue 5): real application workers and
# txn-recoveryd daemons under random faults for --duration, then docs/chaos.md's invariant
# checker and the summary table. CI runs the bounded version (ctest -R chaos_).
#
# Usage: scripts/chaos.sh [--duration 30m] [--seed N] [--profile transfer] [other options
#        of txn-recovery-chaos, see --help]
#
# Against TXN_RECOVERY_TEST_URI if set, otherwise against the embedded test server, which
# this script starts (and stops) itself. Exit status 0 only with 0 invariant violations.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"

args=("$@")
have_duration=0
for a in "${args[@]}"; do [[ "$a" == --duration ]] && have_duration=1; done
((have_duration)) || args+=(--duration 30m)

"$root/scripts/build.sh" "$build_dir" >/dev/null
cmake --build "$build_dir" --target txn-recovery-chaos >/dev/null

if [[ -z "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  state_dir="$build_dir/chaos-testdb"
  TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir" \
    --owner-pid $$ | tail -n 1)"
  export TXN_RECOVERY_TEST_URI
  trap '"$root/scripts/testdb-stop.sh" --state-dir "$state_dir" >/dev/null 2>&1 || true' EXIT
fi
"$build_dir/tests/chaos/txn-recovery-chaos" "${args[@]}"
