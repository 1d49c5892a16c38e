#!/usr/bin/env bash
# Stops the embedded test server started by scripts/testdb-start.sh: SIGTERM, up to 10 s for
# it to exit, then SIGKILL. Removes the state files. Exits 0 if nothing was running.
#
#   scripts/testdb-stop.sh [--state-dir DIR]   (default: .cache/testdb/run at the repo root)
#   scripts/testdb-stop.sh --engine documentdb [--state-dir DIR]
#                       stops the DocumentDB gateway and PostgreSQL (scripts/testdb-documentdb.sh;
#                       default state dir .cache/documentdb/run)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=scripts/testdb-lib.sh
source "$here/testdb-lib.sh"
# --engine, wherever it is: documentdb hands everything else to its own script.
take_engine testdb-stop stop "$@"
set -- ${engine_args[@]+"${engine_args[@]}"}

root="$(dirname "$here")"
state_dir="$root/.cache/testdb/run"

usage() {
  echo "usage: $(basename "$0") [--engine embedded|documentdb] [--state-dir DIR]" >&2
  exit 64
}

while (($# > 0)); do
  case "$1" in
    --state-dir) (($# >= 2)) || usage; state_dir="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "testdb-stop: unknown argument: $1" >&2; usage ;;
  esac
done

pid_file="$state_dir/testdb.pid"
if [[ ! -d "$state_dir" ]]; then
  echo "testdb-stop: nothing running (no $state_dir)"
  exit 0
fi

# testdb-start.sh holds the lock already when it calls us to replace a server.
if [[ -z "${TESTDB_STATE_LOCKED:-}" ]]; then
  exec 9>"$state_dir/testdb.lock"
  flock 9
fi

# Waits up to $2 tenths of a second for pid $1 to exit.
wait_exit() {
  local i
  for ((i = 0; i < $2; i++)); do
    pid_running "$1" || return 0
    sleep 0.1
  done
  ! pid_running "$1"
}

pid="$(cat "$pid_file" 2>/dev/null || true)"
if [[ "$pid" =~ ^[0-9]+$ ]] && is_launcher "$pid"; then
  kill -TERM "$pid" 2>/dev/null || true
  if wait_exit "$pid" 100; then
    echo "testdb-stop: stopped pid $pid"
  else
    echo "testdb-stop: pid $pid ignored SIGTERM for 10 s; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait_exit "$pid" 50 || { echo "testdb-stop: pid $pid survived SIGKILL" >&2; exit 1; }
    echo "testdb-stop: killed pid $pid"
  fi
else
  echo "testdb-stop: nothing running${pid:+ (stale pid $pid)}"
fi
rm -f "$pid_file" "$state_dir/testdb.uri" "$state_dir/testdb.owner"
