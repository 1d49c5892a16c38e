#!/usr/bin/env bash
# The conformance check (docs/proof.md, "Conformance"): the engine's own runs replayed
# through model/recovery.pml by SPIN. The tests run with TXN_RECOVERY_TRACE_FILE set, so
# that the engine logs each step of the model it takes; scripts/conformance.py then asks
# SPIN, transaction by transaction, whether a behaviour of the model takes exactly those
# steps, and prints the first one no behaviour takes where there is one.
#
# Usage: scripts/conformance.sh                 the default run (about a minute), after the
#                                               hand-written traces of tests/conformance/
#        scripts/conformance.sh --seeded        the seeded bugs a, b, c: each must not conform
#        scripts/conformance.sh --trace FILE    check one trace, e.g. a production daemon's
#   --no-chaos       leave the chaos round out of the default run
#   --documentdb     the crash tests' server backend and the chaos round on DocumentDB too
#
# The default run: the crash-at-every-write tests of every profile (the model stands for the
# transfers: the MongoDB manual transfer, the schema book's transfer, the transfer without
# a time field; the others are counted as not checked), on the in-memory store and on the
# embedded test server, a finish raced by another (LiveApplication), and a chaos round of
# 20 s with three daemons and kills on the embedded server. It uses BUILD_DIR (default
# build/, already built: txn_recovery_tests, txn-recovery-chaos, txn-recoveryd); --seeded
# uses BUILD_DIR_SEEDED (default build-seeded/), configured with
# -DTXN_RECOVERY_SEEDED_BUGS=ON. Work files go to CONFORMANCE_DIR (default
# BUILD_DIR/conformance). Exit status 0 only when every checked transaction conforms
# (--seeded: when each seeded bug makes some transaction not conform).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
seeded_dir="${BUILD_DIR_SEEDED:-$root/build-seeded}"
work="${CONFORMANCE_DIR:-$build_dir/conformance}"
mode=default chaos=1 documentdb=0 trace=""
while (($#)); do
  case "$1" in
    --seeded) mode=seeded ;;
    --trace) mode=trace; trace="$2"; shift ;;
    --no-chaos) chaos=0 ;;
    --documentdb) documentdb=1 ;;
    *) echo "conformance: unknown argument '$1' (see the head of $0)" >&2; exit 64 ;;
  esac
  shift
done
check=(python3 "$root/scripts/conformance.py" --work "$work")
if [[ $mode == trace ]]; then
  exec "${check[@]}" "$trace"
fi
mkdir -p "$work"
# The checker itself first, on traces written by hand (tests/conformance/): one that is a
# behaviour of the model, and one whose every transaction is not, each at a known line.
"${check[@]}" "$root/tests/conformance/resume-then-finish.trace" >/dev/null ||
  { echo "conformance: a hand-written behaviour of the model was refused" >&2; exit 1; }
[[ "$("${check[@]}" --expect-fail "$root/tests/conformance/not-the-model.trace" | tail -n 1)" == \
  *"0 conform, 3 do not"* ]] ||
  { echo "conformance: a hand-written trace outside the model was accepted" >&2; exit 1; }
servers=()
cleanup() {
  local s
  for s in "${servers[@]}"; do "$root/scripts/testdb-stop.sh" $s >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
# The embedded test server, for the tests' "mongo" backend and the chaos round.
"$root/scripts/testdb-stop.sh" --state-dir "$work/testdb" >/dev/null 2>&1 || true
TXN_RECOVERY_TEST_URI="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$work/testdb" \
  --owner-pid $$ | tail -n 1)"
servers+=("--state-dir $work/testdb")
export TXN_RECOVERY_TEST_URI

# The crash-at-every-write tests of every profile, and the finish raced by another.
tests='EveryDaemonWrite/*:EveryWrite/*DaemonKilled*:*LiveApplication.AFinishReadBeforeAnother*'

if [[ $mode == seeded ]]; then
  bin="$seeded_dir/tests/txn_recovery_tests"
  [[ -x $bin ]] || { echo "conformance: no $bin (configure $seeded_dir with -DTXN_RECOVERY_SEEDED_BUGS=ON)" >&2; exit 2; }
  status=0
  # Each bug, the runs that reach it: a, the finish raced by another; b, a daemon stalled
  # before the check of a write under its lease; c, every finish of the crash tests.
  declare -A runs=(
    [a]='*LiveApplication.AFinishReadBeforeAnother*'
    [b]='EveryWrite/LeaseDeadline.*resume_stall_before_check'
    [c]='EveryDaemonWrite/DaemonKilled.*'
  )
  for bug in a b c; do
    rm -f "$work/seeded-$bug.trace"
    echo "== seeded bug $bug: ${runs[$bug]}"
    if TXN_RECOVERY_SEEDED_BUG=$bug TXN_RECOVERY_TRACE_FILE="$work/seeded-$bug.trace" \
      "$bin" --gtest_filter="${runs[$bug]}" >"$work/seeded-$bug.tests" 2>&1; then
      echo "   the tests: all pass (they do not catch it)"
    else
      failed="$(grep '^\[  FAILED  \] .*(' "$work/seeded-$bug.tests" | sed 's/, where GetParam.*//; s/ ([0-9]* ms)$//' | sort -u)"
      echo "   the tests: $(wc -l <<<"$failed") fail:"
      sed 's/^\[  FAILED  \] /     /' <<<"$failed" | head -5
    fi
    out="$("${check[@]}" --expect-fail "$work/seeded-$bug.trace")" || status=1
    # The first transaction that does not conform, and the summary.
    awk '/^DOES NOT CONFORM/{n++} n==1' <<<"$out" | grep -E 'DOES NOT|>>|no behaviour' | sed 's/^/   /'
    grep '^conformance: [0-9]' <<<"$out" | sed 's/^/   /'
  done
  exit $status
fi

rm -f "$work/default.trace"
start=$SECONDS
TXN_RECOVERY_TRACE_FILE="$work/default.trace" "$build_dir/tests/txn_recovery_tests" \
  --gtest_filter="$tests" >"$work/default.tests" 2>&1 ||
  { tail -n 30 "$work/default.tests"; echo "conformance: the traced tests failed" >&2; exit 1; }
echo "conformance: traced tests, $(grep -o '^\[==========\] [0-9]* tests' "$work/default.tests"), $((SECONDS - start)) s"
docdb_uri=""
if ((documentdb)); then
  "$root/scripts/testdb-stop.sh" --engine documentdb --state-dir "$work/documentdb" >/dev/null 2>&1 || true
  docdb_uri="$("$root/scripts/testdb-start.sh" --engine documentdb --state-dir "$work/documentdb" | tail -n 1)"
  servers+=("--engine documentdb --state-dir $work/documentdb")
  # The same tests' server backend on DocumentDB (the in-memory ones ran above).
  rm -f "$work/default-documentdb.trace"
  TXN_RECOVERY_TEST_URI="$docdb_uri" TXN_RECOVERY_TRACE_FILE="$work/default-documentdb.trace" \
    "$build_dir/tests/txn_recovery_tests" --gtest_filter="$tests-*memory*" \
    >"$work/default-documentdb.tests" 2>&1 ||
    { tail -n 30 "$work/default-documentdb.tests"; echo "conformance: the traced tests failed on DocumentDB" >&2; exit 1; }
  echo "conformance: traced tests on DocumentDB, $(grep -o '^\[==========\] [0-9]* tests' "$work/default-documentdb.tests")"
fi
if ((chaos)); then
  chaos_round() {  # the chaos round on the server of TXN_RECOVERY_TEST_URI, into trace $1
    rm -f "$1"
    TXN_RECOVERY_TRACE_FILE="$1" "$build_dir/tests/chaos/txn-recovery-chaos" --profile transfer \
      --seed 2 --duration 20s --daemons 3 --quiesce-timeout 90s >"$1.log" 2>&1 ||
      { tail -n 30 "$1.log"; echo "conformance: the chaos round failed" >&2; exit 1; }
    echo "conformance: chaos round, $(grep -E 'daemon processes started' "$1.log" | tr -s ' |' ' ')"
  }
  chaos_round "$work/chaos.trace"
  ((documentdb == 0)) || TXN_RECOVERY_TEST_URI="$docdb_uri" chaos_round "$work/chaos-documentdb.trace"
fi
status=0
"${check[@]}" "$work/default.trace" || status=1
((documentdb == 0)) || "${check[@]}" "$work/default-documentdb.trace" || status=1
if ((chaos)); then
  "${check[@]}" "$work/chaos.trace" || status=1
  ((documentdb == 0)) || "${check[@]}" "$work/chaos-documentdb.trace" || status=1
fi
echo "conformance: $((SECONDS - start)) s in all"
exit $status
