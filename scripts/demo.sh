#!/usr/bin/env bash
# Builds the daemon and the workload tool (nothing else: no tests), starts the embedded test
# database, creates stuck two-phase-commit transfers (the application "killed" after each of
# its steps), runs one sweep and shows the bank before and after. Safe to run again: the
# embedded server keeps nothing once stopped, and seeding resets the demo database.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state_dir="$root/.cache/testdb/demo"

"$root/scripts/deps.sh"
"$root/scripts/build.sh" --target txn-recoveryd --target txn-recovery-workload

uri="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir")"
trap '"$root/scripts/testdb-stop.sh" --state-dir "$state_dir" >/dev/null' EXIT
export TXN_RECOVERYD_MONGODB_URI="$uri"  # the environment overrides the file's uri
workload="$root/build/bench/txn-recovery-workload"
daemon="$root/build/daemon/txn-recoveryd"
config="$root/config/txn-recoveryd.toml"

echo
echo "== The indexes the daemon's queries need, created by a sweep with sweep.manage_indexes = true"
# As a user would: without them every sweep scans the transactions collection, and warns so.
# The demo database is empty on a fresh server, so this sweep has nothing else to do (on a
# server left running by an interrupted demo, what it does is reset by the seeding below).
rc=0
TXN_RECOVERYD_SWEEP_MANAGE_INDEXES=true "$daemon" sweep --config "$config" -v >/dev/null || rc=$?
((rc == 0 || rc == 1)) || exit "$rc"
echo
echo "== An application crashed mid-way through many transfers"
"$workload" seed --database bank --accounts 6 --per-step 2
echo
echo "== Before: money in flight, markers left behind"
"$workload" show --database bank
echo
echo "== What txn-recoveryd would do (--dry-run writes nothing)"
# Exit code 1 here and below is expected: the demo plants one malformed transaction, and
# a quarantined transaction needs an operator.
rc=0
"$daemon" sweep --config "$config" --dry-run || rc=$?
echo "(exit code $rc)"
echo
echo "== txn-recoveryd sweep --config config/txn-recoveryd.toml -v"
rc=0
"$daemon" sweep --config "$config" -v || rc=$?
echo "(exit code $rc: 1 means some transaction was quarantined or not finished)"
((rc == 0 || rc == 1)) || exit "$rc"
echo
echo "== After: every stuck transfer done or cancelled, no markers, total restored"
"$workload" show --database bank
echo
echo "Left alone on purpose: the young pending transfer (5 moved from A0, still in flight,"
echo "its marker on A0), the initial transfer younger than initial_timeout (30m), and the"
echo "quarantined malformed one. Run the demo again to start over."
