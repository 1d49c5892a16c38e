#!/usr/bin/env bash
# Starts the embedded MongoDB-wire test server (mongo-java-server, in-memory backend) in the
# background and prints its URI, `mongodb://127.0.0.1:PORT`.
#
#   scripts/testdb-start.sh [--port N] [--owner-pid PID] [--state-dir DIR]
#   scripts/testdb-start.sh --build-only
#   scripts/testdb-start.sh --engine documentdb [--port N] [--state-dir DIR] [--build-only]
#                           [--replicated [--sync|--async]]
#
#   --engine E       embedded (the default: what this header describes) or documentdb
#                    (PostgreSQL with the DocumentDB extensions and gateway, built from
#                    pinned sources: scripts/testdb-documentdb.sh, which documents it)
#   --port N         port on 127.0.0.1; 0 (the default) picks a free one
#   --owner-pid PID  the server shuts itself down within ~1 s of PID exiting
#   --state-dir DIR  where testdb.pid, testdb.uri, testdb.owner and testdb.log live
#                    (default: .cache/testdb/run at the repository root)
#   --build-only     only make sure the launcher is built (fills the cache; needs Maven
#                    Central the first time), then exit
#   --replicated     (documentdb) two PostgreSQL nodes, a primary and a streaming standby,
#                    for the failover round; --sync (the default) makes a commit wait for
#                    the standby, --async does not (scripts/testdb-documentdb.sh says more)
#
# The launcher is built into .cache/testdb/ (dependencies copied by Maven into lib/, the
# launcher compiled with javac into classes/). Once that cache matches testdb/pom.xml and the
# launcher source, neither Maven nor the network is used again.
#
# Idempotent: if the server recorded in the state dir is alive and accepting connections (and
# compatible with the requested port and owner) its URI is printed again and nothing is
# started. Stop it with scripts/testdb-stop.sh. Environment: TESTDB_START_TIMEOUT (seconds to
# wait for the server, default 60), TESTDB_JAVA_OPTS (extra JVM options, word-split).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=scripts/testdb-lib.sh
source "$here/testdb-lib.sh"
# --engine, wherever it is: documentdb hands everything else to its own script.
take_engine testdb-start start "$@"
set -- ${engine_args[@]+"${engine_args[@]}"}

root="$(dirname "$here")"
src="$root/testdb"
cache="$root/.cache/testdb"

port=0
owner=""
state_dir="$cache/run"
build_only=0
timeout_s="${TESTDB_START_TIMEOUT:-60}"

usage() {
  echo "usage: $(basename "$0") [--engine embedded|documentdb] [--port N] [--owner-pid PID] [--state-dir DIR] | --build-only" >&2
  exit 64
}

while (($# > 0)); do
  case "$1" in
    --port) (($# >= 2)) || usage; port="$2"; shift 2 ;;
    --owner-pid) (($# >= 2)) || usage; owner="$2"; shift 2 ;;
    --state-dir) (($# >= 2)) || usage; state_dir="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h | --help) usage ;;
    *) echo "testdb-start: unknown argument: $1" >&2; usage ;;
  esac
done
if [[ ! "$port" =~ ^[0-9]+$ ]] || ((port > 65535)); then
  echo "testdb-start: bad --port: $port" >&2
  exit 64
fi
[[ -z "$owner" || "$owner" =~ ^[1-9][0-9]*$ ]] || { echo "testdb-start: bad --owner-pid: $owner" >&2; exit 64; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "testdb-start: bad TESTDB_START_TIMEOUT: $timeout_s" >&2; exit 64; }

die() {
  echo "testdb-start: $*" >&2
  exit 1
}

# The last lines of a log file, joined into one line.
tail_of() {
  local text=""
  if [[ -s "$1" ]]; then
    text="$(tail -n 6 "$1" | sed -e '/^[[:space:]]*$/d' | paste -s -d '|' - | sed -e 's/|/ | /g')"
  fi
  echo "${text:-(empty)}"
}

# True if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# The first error of Maven's online attempt (the rest of its output is boilerplate).
maven_error() {
  local line
  line="$(sed -n '/retrying with the network/,$p' "$cache/maven.log" | sed -e 's/\x1b\[[0-9;]*m//g' |
    grep -m 1 '^\[ERROR\] [^ ]' || true)"
  echo "${line:-$(tail_of "$cache/maven.log")}"
}

ensure_tools() {
  local tool missing=()
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "testdb-start: ${missing[*]} not found; running scripts/deps.sh" >&2
  "$here/deps.sh" >&2 || die "${missing[*]} not found and scripts/deps.sh failed"
  for tool in "${missing[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool still not found after scripts/deps.sh"
  done
}

# Fills $cache/lib (runtime jars) and $cache/classes (the launcher), unless they are already
# up to date with testdb/pom.xml and the launcher source.
build() {
  local sources lib_key classes_key tmp jar ok
  ensure_tools java javac
  mkdir -p "$cache"
  exec 8>"$cache/build.lock"
  flock 8

  # lib.stamp: the pom's hash, then the jar names copied for it.
  lib_key="$(sha256sum <"$src/pom.xml" | cut -d' ' -f1)"
  ok=0
  if [[ -f "$cache/lib.stamp" && "$(head -n 1 "$cache/lib.stamp")" == "$lib_key" ]]; then
    ok=1
    while IFS= read -r jar; do
      [[ -f "$cache/lib/$jar" ]] || ok=0
    done < <(tail -n +2 "$cache/lib.stamp")
  fi
  if ((ok == 0)); then
    ensure_tools mvn
    echo "testdb-start: fetching mongo-java-server with Maven into $cache/lib" >&2
    tmp="$cache/lib.tmp.$$"
    rm -rf "$tmp" "$cache/lib.stamp"
    local mvn_args=(-q -B -Dstyle.color=never -f "$src/pom.xml" dependency:copy-dependencies "-DoutputDirectory=$tmp")
    # Offline first: no network when the local Maven repository already has everything.
    if ! mvn -o "${mvn_args[@]}" >"$cache/maven.log" 2>&1; then
      echo "--- offline attempt failed (above); retrying with the network ---" >>"$cache/maven.log"
      mvn "${mvn_args[@]}" >>"$cache/maven.log" 2>&1 ||
        die "Maven could not fetch the test server's dependencies ($cache/maven.log): $(maven_error)"
    fi
    compgen -G "$tmp/mongo-java-server-memory-backend-*.jar" >/dev/null ||
      die "Maven ran but $tmp has no mongo-java-server-memory-backend jar ($cache/maven.log)"
    rm -rf "${cache:?}/lib"
    mv "$tmp" "$cache/lib"
    { echo "$lib_key"; (cd "$cache/lib" && ls -1); } >"$cache/lib.stamp"
  fi

  mapfile -t sources < <(find "$src/src/main/java" -name '*.java' | LC_ALL=C sort)
  ((${#sources[@]} > 0)) || die "no launcher sources under $src/src/main/java"
  classes_key="$({ echo "$lib_key"; cat "${sources[@]}"; } | sha256sum | cut -d' ' -f1)"
  if [[ ! -f "$cache/classes.stamp" || "$(cat "$cache/classes.stamp")" != "$classes_key" ]]; then
    echo "testdb-start: compiling the launcher into $cache/classes" >&2
    tmp="$cache/classes.tmp.$$"
    rm -rf "$tmp" "$cache/classes.stamp"
    javac -nowarn --release 17 -encoding UTF-8 -d "$tmp" -cp "$cache/lib/*" "${sources[@]}" \
      >"$cache/javac.log" 2>&1 || die "javac failed ($cache/javac.log): $(tail_of "$cache/javac.log")"
    rm -rf "$cache/classes"
    mv "$tmp" "$cache/classes"
    echo "$classes_key" >"$cache/classes.stamp"
  fi
  exec 8>&-
}

build
((build_only == 0)) || exit 0

mkdir -p "$state_dir"
state_dir="$(cd "$state_dir" && pwd)"
pid_file="$state_dir/testdb.pid"
uri_file="$state_dir/testdb.uri"
owner_file="$state_dir/testdb.owner"
log="$state_dir/testdb.log"

# One start or stop at a time per state dir. fd 9 is closed for the server (below) so that
# the lock does not outlive this script.
exec 9>"$state_dir/testdb.lock"
flock 9

# Already running?
if [[ -f "$pid_file" ]]; then
  old_pid="$(cat "$pid_file")"
  if [[ "$old_pid" =~ ^[0-9]+$ ]] && is_launcher "$old_pid"; then
    old_uri="$(cat "$uri_file" 2>/dev/null || true)"
    [[ "$old_uri" == mongodb://* ]] || old_uri="$(grep -m 1 '^mongodb://' "$log" 2>/dev/null || true)"
    old_port="${old_uri##*:}"
    old_owner="$(cat "$owner_file" 2>/dev/null || true)"
    why=""
    if [[ ! "$old_port" =~ ^[0-9]+$ ]]; then
      why="its URI is unknown"
    elif ! port_open "$old_port"; then
      why="it does not accept connections on port $old_port"
    elif ((port != 0 && port != old_port)); then
      why="it listens on port $old_port, not $port"
    elif [[ -n "$old_owner" && "$old_owner" != "$owner" ]]; then
      why="it would exit with its owner pid $old_owner"
    fi
    if [[ -z "$why" ]]; then
      echo "$old_uri" >"$uri_file"
      echo "$old_uri"
      exit 0
    fi
    echo "testdb-start: replacing the running server (pid $old_pid): $why" >&2
    TESTDB_STATE_LOCKED=1 "$here/testdb-stop.sh" --state-dir "$state_dir" >&2
  fi
fi
rm -f "$pid_file" "$uri_file" "$owner_file"

cmd=(java)
if [[ -n "${TESTDB_JAVA_OPTS:-}" ]]; then
  read -r -a java_opts <<<"$TESTDB_JAVA_OPTS"
  cmd+=("${java_opts[@]}")
fi
cmd+=(-cp "$cache/classes:$cache/lib/*" "$launcher_class" --port "$port")
[[ -z "$owner" ]] || cmd+=(--owner-pid "$owner")

: >"$log"
# Closes every descriptor above 2 (our locks, and whatever pipes the caller leaked to us).
close_extra_fds() {
  local fd n
  for fd in "/proc/$BASHPID/fd/"*; do
    n="${fd##*/}"
    if ((n > 2)); then exec {n}>&-; fi
  done
}

# Own session (no signals from the caller's terminal or process group), cwd / (the caller's
# directory may go away), standard streams on the log and no other descriptor inherited: a
# caller that reads our output until EOF, such as ctest, must not wait for the server.
(cd / && close_extra_fds && exec setsid "${cmd[@]}") </dev/null >>"$log" 2>&1 &
pid=$!

fail() {
  local status=""
  if pid_running "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    sleep 1
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || status=" (exit status $?)"
  die "$*$status; log $log: $(tail_of "$log")"
}

deadline=$((SECONDS + timeout_s))
uri=""
while [[ -z "$uri" ]]; do
  uri="$(grep -m 1 '^mongodb://' "$log" || true)"
  [[ -n "$uri" ]] && break
  pid_running "$pid" || fail "the server exited before it was ready"
  ((SECONDS < deadline)) || fail "the server printed no URI within ${timeout_s}s"
  sleep 0.1
done

is_launcher "$pid" || fail "pid $pid is not the launcher (setsid forked?)"
port_open "${uri##*:}" || fail "the server announced $uri but does not accept connections"

echo "$pid" >"$pid_file"
echo "$owner" >"$owner_file"
echo "$uri" >"$uri_file.tmp"
mv "$uri_file.tmp" "$uri_file"
echo "$uri"
