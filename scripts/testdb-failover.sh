#!/usr/bin/env bash
# A failover of the replicated DocumentDB test engine (scripts/testdb-start.sh --engine
# documentdb --replicated): the primary's postmaster is killed with SIGKILL, the standby
# promoted, the gateways pointed at it (their port, hence the URI, stays the same), and the
# old primary rejoined as the new primary's standby (pg_rewind; a fresh pg_basebackup if
# that fails). Prints how long the database was unavailable, measured by probing.
#
#   scripts/testdb-failover.sh [--state-dir DIR]   (default: .cache/documentdb/run)
#
# The probe: from the SIGKILL on, every 100 ms, one committed write (an upsert of one row)
# through STATE_DIR/sock, the path the gateways connect through, until one succeeds; with
# --sync that commit also waits for the standby, so after a failover writes come back once
# the old primary has rejoined. Printed on stdout, one line:
#   failover n1 -> n2: unavailable 3.42 s (promoted after 0.61 s, rejoined after 2.95 s by pg_rewind)
# The gateways' TCP ports are checked to still accept connections afterwards.
#
# Exit status: 0 after a failover whose new pair streams; 1 (one line on stderr naming the
# step and its log) otherwise; 64 on bad arguments. Environment: TESTDB_START_TIMEOUT
# (seconds allowed to each step, default 120).
set -euo pipefail
shopt -s inherit_errexit

me=testdb-failover
# shellcheck source=scripts/testdb-documentdb-lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/testdb-documentdb-lib.sh"

state_dir="$root/.cache/documentdb/run"
timeout_s="${TESTDB_START_TIMEOUT:-120}"
while (($# > 0)); do
  case "$1" in
    --state-dir) (($# >= 2)) || { echo "$me: --state-dir needs a value" >&2; exit 64; }; state_dir="$2"; shift 2 ;;
    *) echo "usage: $(basename "$0") [--state-dir DIR]" >&2; exit 64 ;;
  esac
done
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "$me: bad TESTDB_START_TIMEOUT: $timeout_s" >&2; exit 64; }
[[ -f "$state_dir/replicated" ]] ||
  die "step 'state dir': $state_dir holds no --replicated pair (scripts/testdb-start.sh --engine documentdb --replicated --state-dir DIR)"
enter_state_dir
replication="$(cat "$state_dir/replicated")"
old="$(cat "$state_dir/primary")"
new="$(other_node "$old")"

use_node "$state_dir/$new"
postgres_alive || die "step 'check': the standby $new is not running (log $pg_log)"
use_node "$state_dir/$old"
victim="$(postmaster_pid)" || die "step 'check': the primary $old is not running (log $pg_log)"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# One committed write through the gateways' path; fails on any error or warning (a commit
# whose wait for the standby was cancelled is only local: a WARNING, not a success).
probe_write() {
  local out
  out="$(PGCONNECT_TIMEOUT=1 timeout 2 "${svc_prefix[@]}" "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 \
    -h "$state_dir/sock" -p "$pg_port" -d postgres \
    -c "INSERT INTO txnrecovery_probe VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = now()" 2>&1)" &&
    [[ "$out" != *WARNING* && "$out" != *ERROR* ]]
}

# The prober: from the kill on, until a write succeeds (bounded by the timeout), then
# writes the time of that success to its file.
probe_file="$state_dir/failover.probe"
rm -f "$probe_file"
t0="$(now_ms)"
(
  close_extra_fds
  deadline=$((SECONDS + 3 * timeout_s))
  sleep 0.05
  until probe_write; do
    ((SECONDS < deadline)) || exit 1
    sleep 0.1
  done
  now_ms >"$probe_file"
) </dev/null >/dev/null 2>&1 &
prober=$!

mapfile -t children < <(ps -o pid= --ppid "$victim" 2>/dev/null || true)
kill -KILL "$victim"
# Its children (backends, walsender, background workers) notice their postmaster's death
# and exit; wait for every one before promoting (no two primaries) and rewinding.
deadline=$((SECONDS + timeout_s))
for pid in "$victim" ${children[@]+"${children[@]}"}; do
  pid="${pid// /}"
  while pid_running "$pid"; do
    ((SECONDS < deadline)) || die "step 'kill': pid $pid of $old did not exit within ${timeout_s}s"
    sleep 0.05
  done
done

# A killed postmaster that nobody reaps stays a zombie, and PostgreSQL takes the pid of its
# lock files for a live server (kill(pid, 0) succeeds): they are stale once every process
# is gone.
rm -f "$pgdata/postmaster.pid" "$sock/.s.PGSQL.$pg_port.lock"

use_node "$state_dir/$new"
step "promote $new" "$state_dir/pg_ctl.log" as_svc "$pg_bin/pg_ctl" -D "$pgdata" -w -t "$timeout_s" -s promote
# The configuration follows the roles (a standby.signal left behind would demote it at its
# next start; primary_conninfo goes).
write_postgres_config
step "reload $new" "$state_dir/pg_ctl.log" as_svc "$pg_bin/pg_ctl" -D "$pgdata" -s reload
point_gateway_at "$new"
t_promoted="$(now_ms)"

# pg_rewind reads the new timeline from the source's control file, which a freshly promoted
# server updates only at its next checkpoint (without it: "no rewind required", and a
# standby that cannot follow).
step "checkpoint $new" "$state_dir/pg_ctl.log" psql_svc -c CHECKPOINT

# The old primary joins the new one as its standby: pg_rewind takes back what it wrote
# that the new primary never received (it first finishes its crash recovery itself), a new
# copy when it cannot.
use_node "$state_dir/$old"
how="pg_rewind"
log="$state_dir/rewind.log"
: >"$log"
if ! as_svc "$pg_bin/pg_rewind" -D "$pgdata" --source-server="host=$state_dir/$new/sock port=$pg_port dbname=postgres" \
  >>"$log" 2>&1; then
  note "pg_rewind failed (log $log): $(tail_of "$log"); copying $new afresh"
  how="pg_basebackup"
  clone_node "$old" "$new"
fi
start_postgres "$state_dir/$new/sock"
t_rejoined="$(now_ms)"

use_node "$state_dir/$new"
wait_streaming
status=0
wait "$prober" || status=$?
((status == 0)) && [[ -s "$probe_file" ]] ||
  die "step 'probe': no write succeeded within $((3 * timeout_s))s of the kill (log $pg_log)"
t_up="$(cat "$probe_file")"
rm -f "$probe_file"

for name in gateway gateway-tls; do
  p="$(uri_port "$state_dir/$([[ "$name" == gateway ]] && echo testdb.uri || echo testdb-tls.uri)")"
  gateway_pid "$name" >/dev/null && [[ "$p" =~ ^[0-9]+$ ]] && port_open "$p" ||
    die "step 'gateways': $name does not accept connections any more (log $state_dir/$name.log)"
done

secs() { printf '%d.%02d' $(($1 / 1000)) $((($1 % 1000) / 10)); }
echo "failover $old -> $new ($replication): unavailable $(secs $((t_up - t0))) s" \
  "(promoted after $(secs $((t_promoted - t0))) s, rejoined after $(secs $((t_rejoined - t0))) s by $how)"
