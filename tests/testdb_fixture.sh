#!/usr/bin/env bash
# CTest fixture for the embedded test database: `start DIR` / `stop DIR`.
# ctest runs this script directly, so $PPID is ctest itself: the server is told to exit
# when ctest does, and a crashed or killed test run cannot leak it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
action="${1:?usage: testdb_fixture.sh start|stop STATE_DIR}"
state_dir="${2:?usage: testdb_fixture.sh start|stop STATE_DIR}"

if [[ -n "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  echo "TXN_RECOVERY_TEST_URI is set: tests use that server; the embedded one is not ${action}ed"
  exit 0
fi

case "$action" in
  start)
    rm -f "$state_dir/testdb.uri" "$state_dir/crashed"
    exec "$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir" --owner-pid "$PPID"
    ;;
  stop)
    # A server that died during the run fails this test too, and leaves `crashed` (its last
    # log lines) for scripts/test.sh, which then runs the pass again: a crash of the server
    # is not a result of the tests that failed with it.
    # shellcheck source=scripts/testdb-lib.sh
    source "$root/scripts/testdb-lib.sh"
    pid="$(cat "$state_dir/testdb.pid" 2>/dev/null || true)"
    log="$state_dir/testdb.log"
    crashed=""
    if [[ "$pid" =~ ^[0-9]+$ ]] && ! is_launcher "$pid"; then
      crashed="the embedded test server (pid $pid) died during the run"
    elif grep -qE 'OutOfMemoryError|A fatal error has been detected|hs_err_pid' "$log" 2>/dev/null; then
      crashed="the embedded test server's JVM logged a fatal error"
    fi
    if [[ -n "$crashed" ]]; then
      { echo "$crashed; the last lines of $log:"; tail -n 15 "$log" 2>/dev/null | sed 's/^/  | /'; } |
        tee "$state_dir/crashed" >&2
    fi
    "$root/scripts/testdb-stop.sh" --state-dir "$state_dir"
    [[ -z "$crashed" ]]
    ;;
  *)
    echo "usage: testdb_fixture.sh start|stop STATE_DIR" >&2
    exit 64
    ;;
esac
