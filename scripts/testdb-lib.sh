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

# Takes `--engine E` out of the arguments, wherever it is. For documentdb, hands the rest to
# testdb-documentdb.sh ACTION (never returns); for embedded, leaves the rest in
# engine_args for the caller. NAME is the calling script, for messages.
take_engine() {
  local name="$1" action="$2" engine=embedded
  shift 2
  engine_args=()
  while (($# > 0)); do
    case "$1" in
      --engine)
        (($# >= 2)) || { echo "$name: --engine needs embedded or documentdb" >&2; exit 64; }
        engine="$2"
        shift 2
        ;;
      *) engine_args+=("$1"); shift ;;
    esac
  done
  case "$engine" in
    embedded) ;;
    documentdb)
      exec "$(dirname "${BASH_SOURCE[0]}")/testdb-documentdb.sh" "$action" \
        ${engine_args[@]+"${engine_args[@]}"}
      ;;
    *) echo "$name: unknown engine: $engine (embedded or documentdb)" >&2; exit 64 ;;
  esac
}
