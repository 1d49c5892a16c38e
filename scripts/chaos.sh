#!/usr/bin/env bash
# The long version of the fault-injection suite (issue 5): real application workers and
# txn-recoveryd daemons under random faults for --duration, then docs/chaos.md's invariant
# checker and the summary table. CI runs the bounded version (ctest -R chaos_).
#
# Usage: scripts/chaos.sh [--duration 30m] [--seed N] [--profile transfer] [other options
#        of txn-recovery-chaos, see --help]
#        scripts/chaos.sh --failover [--sync|--async] [--failovers 20] [--profile transfer]
#        [other options of txn-recovery-chaos]
#
# Against TXN_RECOVERY_TEST_URI if set, otherwise against the embedded test server, which
# this script starts (and stops) itself. With --failover, against a replicated DocumentDB
# (a primary and a streaming standby, --sync by default) that it starts in
# BUILD_DIR/chaos-failover (and stops), the only fault a failover every few seconds
# (scripts/testdb-failover.sh). Exit status 0 only with 0 invariant violations.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"

args=()
failover=0
replication=--sync
have_duration=0
have_failovers=0
while (($# > 0)); do
  case "$1" in
    --failover) failover=1 ;;
    --sync | --async) replication="$1" ;;
    --duration) have_duration=1; args+=("$1") ;;
    --failovers) have_failovers=1; args+=("$1") ;;
    *) args+=("$1") ;;
  esac
  shift
done
if ((failover)); then
  ((have_failovers)) || args+=(--failovers 20)
else
  ((have_duration)) || args+=(--duration 30m)
fi

if [[ -z "${TXN_RECOVERY_CHAOS_NO_BUILD:-}" ]]; then
  "$root/scripts/build.sh" "$build_dir" >/dev/null
  cmake --build "$build_dir" --target txn-recovery-chaos >/dev/null
fi

if ((failover)); then
  [[ -z "${TXN_RECOVERY_TEST_URI:-}" ]] ||
    { echo "chaos.sh: --failover starts its own replicated DocumentDB; unset TXN_RECOVERY_TEST_URI" >&2; exit 64; }
  state_dir="$build_dir/chaos-failover"
  # Each round starts from a new pair, whose mode is the one asked for.
  "$root/scripts/testdb-stop.sh" --engine documentdb --state-dir "$state_dir" >/dev/null 2>&1 || true
  rm -rf "$state_dir"
  trap '"$root/scripts/testdb-stop.sh" --engine documentdb --state-dir "$state_dir" >/dev/null 2>&1 || true' EXIT
  # The URI carries the generated password: the environment, never argv.
  TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --engine documentdb --replicated \
    "$replication" --state-dir "$state_dir" | tail -n 1)"
  export TXN_RECOVERY_TEST_URI
  args+=(--failover-state-dir "$state_dir")
elif [[ -z "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  state_dir="$build_dir/chaos-testdb"
  TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir" \
    --owner-pid $$ | tail -n 1)"
  export TXN_RECOVERY_TEST_URI
  trap '"$root/scripts/testdb-stop.sh" --state-dir "$state_dir" >/dev/null 2>&1 || true' EXIT
fi
"$build_dir/tests/chaos/txn-recovery-chaos" "${args[@]}"
