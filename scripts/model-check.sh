#!/usr/bin/env bash
# Model-checks the recovery protocol (model/recovery.pml) with SPIN, exhaustively, in every
# configuration below, and prints a table: configuration, expected, result, states stored,
# transitions, memory, seconds. Fails when a configuration expected clean finds a violation
# (or cannot finish), or when a configuration expected to violate a property (a seeded bug,
# a known fault, a finding of the model) does not violate that property.
#
# Usage: scripts/model-check.sh [--only REGEX] [--jobs N] [--trail NAME] [--list]
#   --only REGEX   run only the configurations whose name matches
#   --jobs N       configurations checked at once (default 2)
#   --trail NAME   print the shortest counterexample of one configuration, step by step
#   --list         list the configurations and their -D flags
# Work files go to build/model-check/ (MODEL_CHECK_DIR overrides). See model/README.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="$root/model/recovery.pml"
work="${MODEL_CHECK_DIR:-$root/build/model-check}"
only="" jobs=2 trail="" list=0
while (($#)); do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --trail) trail="$2"; shift 2 ;;
    --list) list=1; shift ;;
    *) echo "model-check: unknown argument '$1' (see the head of $0)" >&2; exit 64 ;;
  esac
done

# name | expected (clean, or violation:<property>) | -D flags
# Properties: money (conservation, each step applied once net), leftover (marker or tag of
# a terminal transaction left at the end), terminal, one-way (committed and rolled back),
# atomicity (tagged documents of a terminal transaction), quarantine, deadline (a daemon
# write landed after its lease deadline), exclusive (fleet: a daemon's write landed after
# another daemon began an action on the same transaction), liveness (fleet with a hung
# member: a transaction overdue was not terminal KLIVE ticks later, with the healthy
# member sweeping every tick), count (a transaction marked quarantined without its record
# in the daemon's collection), repaired (a record left without its mark after the repair).
configs=(
  "manual-transfer-before-fixes|violation:money|-DBEFORE_TAKEOVER -DBEFORE_TRACE -DBEFORE_FOLD"
  "manual-transfer|clean|"
  "manual-transfer-2tx-1d|clean|-DNTX=2 -DND=1"
  "manual-transfer-no-resume|clean|-DNO_RESUME"
  "manual-transfer-no-resume-2tx-1d|clean|-DNO_RESUME -DNTX=2 -DND=1"
  "manual-transfer-before-trace|violation:money|-DBEFORE_TRACE"
  "manual-transfer-before-takeover|violation:money|-DBEFORE_TAKEOVER"
  "manual-transfer-undo-own-applies|violation:money|-DBEFORE_TAKEOVER -DBEFORE_TRACE -DFIX_UNDO_OWN"
  "tagged-inserts-conditional|clean|-DTAGGED"
  "tagged-inserts-conditional-2tx-1d|clean|-DTAGGED -DNTX=2 -DND=1"
  "tagged-inserts-unconditional-finishing|violation:one-way|-DTAGGED -DUNCOND_FINISHING"
  "lease-fence-only|clean|-DNO_LOCAL_CHECK"
  "lease-local-check-only|violation:deadline|-DNO_FENCE"
  "lease-local-check-only-money|violation:money|-DNO_FENCE -DNO_DEADLINE_ASSERT"
  "lease-none-money|violation:money|-DNO_FENCE -DNO_LOCAL_CHECK -DNO_DEADLINE_ASSERT"
  "lease-none-money-traces-kept|clean|-DNO_FENCE -DNO_LOCAL_CHECK -DNO_DEADLINE_ASSERT -DNO_UNTRACE"
  "seeded-a-no-deadline-check|violation:deadline|-DNO_FENCE -DNO_LOCAL_CHECK"
  "seeded-a-no-deadline-check-tagged-inserts|violation:deadline|-DTAGGED -DNO_FENCE -DNO_LOCAL_CHECK"
  "seeded-b-rollback-applied|violation:one-way|-DBUG_ROLLBACK_APPLIED"
  "seeded-b-rollback-applied-tagged-inserts|violation:one-way|-DTAGGED -DBUG_ROLLBACK_APPLIED"
  "no-orphan-scan|violation:leftover|-DNO_ORPHAN_SCAN"
  "wloss-w1|violation:money|-DWLOSS"
  "wloss-app-majority-only|violation:money|-DWLOSS -DAPP_MAJORITY"
  "wloss-daemon-majority-only|violation:money|-DWLOSS -DDAEMON_MAJORITY"
  "wloss-majority|clean|-DWLOSS -DAPP_MAJORITY -DDAEMON_MAJORITY"
  "wloss-w1-tagged-inserts|violation:leftover|-DTAGGED -DWLOSS"
  "wloss-majority-tagged-inserts|clean|-DTAGGED -DWLOSS -DAPP_MAJORITY -DDAEMON_MAJORITY"
  "fleet-manual-transfer|clean|-DFLEET"
  "fleet-tagged-inserts|clean|-DFLEET -DTAGGED"
  "seeded-c-fleet-share-as-permission|violation:exclusive|-DFLEET -DBUG_SHARE_AS_PERMISSION"
  "manual-transfer-finish-unread|clean|-DBEFORE_FINISH_READ"
  "seeded-d-untrace-before-done|violation:money|-DBUG_UNTRACE_BEFORE_DONE"
  "seeded-e-finish-read-before-claim|violation:money|-DBUG_FINISH_STALE_READ"
  "fleet-overdue-tagged-inserts|clean|-DFLEET -DOVERDUE -DTAGGED"
  "fleet-hung-overdue|clean|-DFLEET -DHUNG -DOVERDUE"
  "fleet-hung-overdue-tagged-inserts|clean|-DFLEET -DHUNG -DOVERDUE -DTAGGED"
  "fleet-hung-overdue-2tx|clean|-DFLEET -DHUNG -DOVERDUE -DNTX=2"
  "fleet-hung-leaves-watch|clean|-DFLEET -DHUNG -DHUNG_LEAVES"
  "seeded-f-fleet-hung-no-overdue|violation:liveness|-DFLEET -DHUNG"
  "fleet-cold-start-tagged-inserts|clean|-DFLEET -DCOLD_START -DTAGGED"
  "fleet-overdue-sighted-tagged-inserts|clean|-DFLEET -DOVERDUE_SIGHTED -DTAGGED"
  "fleet-hung-overdue-sighted|clean|-DFLEET -DHUNG -DOVERDUE_SIGHTED"
  "fleet-hung-overdue-sighted-tagged-inserts|clean|-DFLEET -DHUNG -DOVERDUE_SIGHTED -DTAGGED"
  "fleet-hung-overdue-sighted-2tx|clean|-DFLEET -DHUNG -DOVERDUE_SIGHTED -DNTX=2"
  "seeded-g-fleet-sighting-forgotten|violation:liveness|-DFLEET -DHUNG -DOVERDUE_SIGHTED -DBUG_SIGHTING_PER_SWEEP"
  "manual-transfer-1d|clean|-DND=1"
  "manual-transfer-before-fold|clean|-DBEFORE_FOLD"
  "manual-transfer-before-fold-2tx-1d|clean|-DBEFORE_FOLD -DNTX=2 -DND=1"
  "tagged-inserts-before-fold|clean|-DBEFORE_FOLD -DTAGGED"
  "fleet-tagged-inserts-before-fold|clean|-DBEFORE_FOLD -DFLEET -DTAGGED"
  "claim-in-flight|clean|-DCLAIM_IN_FLIGHT"
  "claim-in-flight-fence-only|clean|-DCLAIM_IN_FLIGHT -DNO_LOCAL_CHECK"
  "fold-mixed-manual-transfer|clean|-DFOLD_MIXED"
  "fold-mixed-fleet-manual-transfer|clean|-DFOLD_MIXED -DFLEET"
  "fold-mixed-fleet-tagged-inserts|clean|-DFOLD_MIXED -DFLEET -DTAGGED"
  "seeded-h-fold-rollback-unread|violation:one-way|-DBUG_FOLD_ROLLBACK_UNREAD"
  "seeded-h-fold-rollback-unread-tagged-inserts|violation:one-way|-DTAGGED -DBUG_FOLD_ROLLBACK_UNREAD"
  "seeded-i-fold-resume-lease-only|violation:money|-DBUG_FOLD_RESUME_LEASE_ONLY"
  "seeded-j-fold-cancel-unread|violation:one-way|-DBUG_FOLD_CANCEL_UNREAD"
  "seeded-k-fold-claim-unfenced|violation:deadline|-DCLAIM_IN_FLIGHT -DBUG_CLAIM_UNFENCED"
  "seeded-l-fold-mixed-lease-ignored|violation:exclusive|-DFOLD_MIXED -DFLEET -DFOLD_RESUMING_AGAIN -DBUG_FOLD_LEASE_IGNORED"
  "manual-transfer-before-read-folds|clean|-DBEFORE_READ_FOLDS"
  "manual-transfer-rollback-undo-reread|clean|-DROLLBACK_UNDO_REREAD"
  "manual-transfer-rollback-undo-reread-2tx-1d|clean|-DROLLBACK_UNDO_REREAD -DNTX=2 -DND=1"
  "read-fold-mixed-manual-transfer|clean|-DREAD_FOLD_MIXED"
  "read-fold-mixed-fleet-manual-transfer|clean|-DREAD_FOLD_MIXED -DFLEET"
  "seeded-m-done-any-unmarked|violation:money|-DBUG_DONE_ANY_UNMARKED"
  "seeded-n-done-lease-ignored|violation:money|-DBUG_DONE_LEASE_IGNORED"
  "seeded-o-cancel-direct-unread|violation:one-way|-DBUG_CANCEL_DIRECT_UNREAD"
  "quarantine-records|clean|-DQUAR_RECORD"
  "seeded-p-quarantine-mark-first|violation:count|-DQUAR_RECORD -DBUG_QUAR_MARK_FIRST"
  "seeded-q-quarantine-delete-unread|violation:count|-DQUAR_RECORD -DBUG_QUAR_DELETE_UNREAD"
)

if ((list)); then
  for c in "${configs[@]}"; do IFS='|' read -r n e f <<<"$c"; printf '%-44s %-20s %s\n' "$n" "$e" "$f"; done
  exit 0
fi

if ! command -v spin >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
  "$root/scripts/deps.sh"
fi
mkdir -p "$work"

# The property an assertion of the model stands for, from the text pan prints.
property_of() {
  local text="$1"
  case "$text" in
    *'||rec['*) echo count ;;
    *'!(rec['*) echo repaired ;;
    *'drv[t]'*) echo exclusive ;;
    *'stk['*) echo liveness ;;
    *'drem[me]>0'*) echo deadline ;;
    *cmt\[t\]\&\&*) echo one-way ;;
    *c_net*|*c_bal*) echo money ;;
    *'!(c_mk['*|*'!=1'*) echo leftover ;;
    *'==2)'*|*'==0))'*) echo atomicity ;;
    *quar*) echo quarantine ;;
    *c_st*) echo terminal ;;
    *) echo "unknown" ;;
  esac
}

flags_of() {
  local c
  for c in "${configs[@]}"; do
    IFS='|' read -r n e f <<<"$c"
    if [[ "$n" == "$1" ]]; then echo "$f"; return 0; fi
  done
  echo "model-check: no configuration '$1' (try --list)" >&2
  return 1
}

if [[ -n "$trail" ]]; then
  flags="$(flags_of "$trail")"
  dir="$work/trail-$trail"
  rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
  # shellcheck disable=SC2086
  spin $flags -a "$model" >spin.txt
  gcc -O1 -DSAFETY -DBFS -DCOLLAPSE -DMEMLIM=3000 -w -o pan pan.c
  ./pan -E -n >pan.txt 2>&1 || true
  if ! grep -q 'assertion violated' pan.txt; then
    echo "model-check: $trail: no violation"
    exit 0
  fi
  text="$(grep -m1 'assertion violated' pan.txt)"
  echo "$trail: $(property_of "$text") violated; shortest trail, then the failed assertion"
  echo "(states: 1 initial, 2 pending/started, 3 applied/finishing, 4 done, 5 canceling/rollback,"
  echo " 6 cancelled, 7 resuming; actions: 1 cancel, 2 resume, 3 roll back, 4 finish,"
  echo " 5 finish the rollback, 6 late-write check; ': 1' matched, ': 0' matched nothing;"
  echo " live members, a fleet's view: 1 daemon 0, 2 daemon 1, 3 both; a read of the"
  echo " participants: 1 marker of step 0, 2 its trace, 4 marker of step 1, 8 its trace):"
  # shellcheck disable=SC2086
  spin $flags -t -k recovery.pml.trail "$model" 2>&1 | sed -n 's/^ *MSC: /  /p'
  echo "  -> $(echo "$text" | cut -c1-240)"
  exit 0
fi

check_one() { # name expected flags
  local name="$1" expected="$2" flags="$3" dir="$work/$1" start end
  rm -rf "$dir" && mkdir -p "$dir"
  (
    cd "$dir"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! spin $flags -a "$model" >spin.txt 2>&1; then
      echo "spin failed" >result
      exit 0
    fi
    if ! gcc -O1 -DSAFETY -DCOLLAPSE -DMEMLIM=2048 -w -o pan pan.c >gcc.txt 2>&1; then
      echo "gcc failed" >result
      exit 0
    fi
    ./pan -m200000 -E -n >pan.txt 2>&1 || true
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", e - s }' >wall
  )
}

selected=()
for c in "${configs[@]}"; do
  IFS='|' read -r n e f <<<"$c"
  if [[ -z "$only" || "$n" =~ $only ]]; then selected+=("$c"); fi
done
if ((${#selected[@]} == 0)); then
  echo "model-check: no configuration matches '$only'" >&2
  exit 64
fi

echo "== model check (SPIN $(spin -V | awk '{print $3}'), ${#selected[@]} configurations, $jobs at once)"
t0=$(date +%s)
running=0
for c in "${selected[@]}"; do
  IFS='|' read -r n e f <<<"$c"
  check_one "$n" "$e" "$f" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

printf '%-44s %-20s %-20s %12s %12s %9s %8s\n' configuration expected result "states" transitions "memory" seconds
passed=0 failed=0
for c in "${selected[@]}"; do
  IFS='|' read -r n e f <<<"$c"
  dir="$work/$n"
  result="" states="-" trans="-" mem="-" secs="-"
  if [[ -f "$dir/result" ]]; then
    result="$(cat "$dir/result")"
  elif [[ ! -f "$dir/pan.txt" ]]; then
    result="not run"
  else
    out="$dir/pan.txt"
    states="$(awk '/states, stored/ { print $1; exit }' "$out")"
    trans="$(awk '/transitions \(= stored\+matched\)/ { print $1; exit }' "$out")"
    mem="$(awk '/total actual memory usage/ { printf "%.0f MB", $1; exit }' "$out")"
    secs="$(awk '/pan: elapsed time/ { print $4; exit }' "$out")"
    if grep -q 'assertion violated' "$out"; then
      result="violation:$(property_of "$(grep -m1 'assertion violated' "$out")")"
    elif grep -qE 'max search depth too small|reached -DMEMLIM|Search not completed' "$out"; then
      result="incomplete"
    elif grep -q 'errors: 0' "$out"; then
      result="clean"
    else
      result="pan failed"
    fi
  fi
  if [[ "$result" == "$e" ]]; then
    passed=$((passed + 1))
    mark=""
  else
    failed=$((failed + 1))
    mark="  <-- expected $e"
  fi
  printf '%-44s %-20s %-20s %12s %12s %9s %8s%s\n' "$n" "$e" "$result" "${states:--}" "${trans:--}" "${mem:--}" "${secs:--}" "$mark"
done
echo "(states stored and transitions up to the first violation where there is one; seconds:"
echo " pan's search time; memory: pan's total; wall time of the whole check: $(($(date +%s) - t0))s)"
echo "model-check: $passed passed, $failed failed"
((failed == 0))
