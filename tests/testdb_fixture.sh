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
    rm -f "$state_dir/testdb.uri"
    exec "$root/scripts/testdb-start.sh" --port 0 --state-dir "$state_dir" --owner-pid "$PPID"
    ;;
  stop)
    exec "$root/scripts/testdb-stop.sh" --state-dir "$state_dir"
    ;;
  *)
    echo "usage: testdb_fixture.sh start|stop STATE_DIR" >&2
    exit 64
    ;;
esac
