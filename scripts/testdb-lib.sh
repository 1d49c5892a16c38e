# Shared by testdb-start.sh and testdb-stop.sh (sourced, not run).
# shellcheck shell=bash

launcher_class=txnrecovery.testdb.Launcher

# True if PID is a process that has not exited. A zombie counts as exited: on machines
# whose init does not reap, `kill -0` would call a stopped server alive.
pid_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

# True if PID is a running test server launcher (guards against a reused pid).
is_launcher() {
  pid_running "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$launcher_class"
}
