#!/usr/bin/env bash
# Builds everything and runs the whole test suite on both test engines: the unit tests, and
# the database tests and chaos rounds through libmongoc against the embedded MongoDB-wire
# server (mongo-java-server, started by the suite itself), then the database tests and the
# chaos rounds again against DocumentDB (PostgreSQL with Microsoft's DocumentDB extensions
# and gateway), started through `scripts/testdb-start.sh --engine documentdb` (which builds
# it the first time, into the shared cache docs/test-engines.md describes) and stopped
# afterwards unless it was already running. CI (.ci/run) runs exactly this.
#
# Usage: scripts/test.sh [--sanitize] [--engine embedded|documentdb] [--no-deploy] [-- CTEST_ARGS...]
#   --sanitize       ASan/UBSan build in build-asan/
#   --engine E       only the build and the pass against E (no Release check, formatting,
#                    clang-tidy, model check or deployment pass; against DocumentDB, the
#                    database tests only)
#   --no-deploy      leave out the deployment pass (below)
#   -- CTEST_ARGS    given to every ctest pass, e.g. `-- -R Retention`
# With TXN_RECOVERY_TEST_URI set, the one pass runs every test against that server (a real
# mongod or replica set) instead of the two engines.
# Safe to run again: installs only what is missing, reuses the build.
#
# A pass is one ctest run. The database tests (ctest label `database`) run in both passes;
# the unit tests only in the first. A server that crashes is not a test result: when a pass
# fails and its server died or logged a crash during it (the JVM of the embedded server; for
# DocumentDB the gateway, or a PostgreSQL backend killed by a signal, a PANIC, RUM's "lost
# saved point in index"), the server's log lines are shown and that pass runs once more. A
# pass that fails with its server intact is a failure, never run again.
#
# The deployment pass (scripts/run-deployed.sh), after the embedded pass of a whole run:
# the Debian package that pass built, installed and booted under systemd in a Debian 12
# root file system, the container image built with podman and run, the Kubernetes
# manifests and the Helm chart played with podman kube play; each check printed by name. A
# machine that cannot run it (not root, no namespaces) prints "skipped: why" and goes on.
#
# The test build (scripts/build.sh) is the build a user or a distribution makes, `cmake
# -DCMAKE_BUILD_TYPE=Release`, with warnings as errors: a warning only -O3 shows (GCC 12's
# -Wrestrict) fails it, as one in any other build would.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=""
build_dir="$root/build"
engines=(embedded documentdb)
only=0
deploy=1
ctest_args=()
while (($# > 0)); do
  case "$1" in
    --)
      shift
      ctest_args=("$@")
      break
      ;;
    --sanitize)
      sanitize="--sanitize"
      build_dir="$root/build-asan"
      shift
      ;;
    --no-deploy)
      deploy=0
      shift
      ;;
    --engine)
      case "${2:-}" in
        embedded | documentdb) engines=("$2") ;;
        *) echo "test.sh: --engine takes embedded or documentdb" >&2; exit 64 ;;
      esac
      only=1
      shift 2
      ;;
    *) echo "usage: scripts/test.sh [--sanitize] [--engine embedded|documentdb] [--no-deploy] [-- CTEST_ARGS...]" >&2; exit 64 ;;
  esac
done
if [[ -n "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  ((only == 0)) || { echo "test.sh: --engine and TXN_RECOVERY_TEST_URI exclude each other" >&2; exit 64; }
  engines=(uri)
fi

# --packaging: CTest debian_package builds the Debian package (debhelper) and lints it.
# --deploy: the deployment pass's debootstrap, systemd-nspawn and podman.
"$root/scripts/deps.sh" --packaging --deploy
"$root/scripts/build.sh" $sanitize "$build_dir"

if ((only == 0)); then
  echo "== formatting (clang-format)"
  mapfile -t sources < <(cd "$root" && git ls-files '*.cc' '*.h' 2>/dev/null || true)
  if ((${#sources[@]})); then
    (cd "$root" && clang-format --dry-run -Werror "${sources[@]}")
  fi

  # The layers of docs/architecture.md: no include reaches a later layer or, from the
  # daemon, a private header; no cycle between layers.
  echo "== layers (scripts/check-layers.py)"
  python3 "$root/scripts/check-layers.py" "$root"
  # No class of lib/ or daemon/ over 400 lines (functions: clang-tidy, below).
  echo "== sizes (scripts/check-sizes.py)"
  python3 "$root/scripts/check-sizes.py" "$root"

  # The checks of .clang-tidy over lib/, daemon/, tests/ and bench/; a file's clean result
  # is cached per user (scripts/tidy.sh), so a warm run costs seconds. The sanitizer run
  # leaves it out: the same sources, only under other flags.
  if [[ -z "$sanitize" ]]; then
    echo "== clang-tidy"
    "$root/scripts/tidy.sh" "$build_dir"
  fi

  # The formal model of the recovery protocol (model/README.md): every configuration of
  # scripts/model-check.sh, clean where expected, each seeded bug found. Nothing in it is
  # compiled with the project's flags, so the sanitizer run leaves it out.
  # Exhaustive and deterministic: a result is cached per user, keyed by the model, the
  # checker and the versions of SPIN and gcc, so that a fresh clone (CI's) does not spend
  # minutes proving again what was proved for the very same inputs. When the deployment
  # pass runs, the check runs beside it, after the embedded pass: one is CPU, the other
  # mostly waits on systemd, podman and the network.
  if [[ -z "$sanitize" ]]; then
    model_key="$({ cat "$root/model/recovery.pml" "$root/scripts/model-check.sh"; spin -V; gcc --version; } |
      sha256sum | cut -c1-16)"
    model_done="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}/model-check/$model_key"
  fi
fi

# The model check, or its cached result; fails when it fails.
model_check() {
  if [[ -s "$model_done" ]]; then
    echo "== model check: passed for this model, checker, SPIN and gcc before ($model_done)"
    cat "$model_done"
    return 0
  fi
  echo "== model check"
  mkdir -p "$(dirname "$model_done")"
  local rc=0
  MODEL_CHECK_DIR="$build_dir/model-check" "$root/scripts/model-check.sh" >"$model_done.tmp.$$" 2>&1 || rc=$?
  cat "$model_done.tmp.$$"
  if ((rc == 0)); then mv "$model_done.tmp.$$" "$model_done"; else rm -f "$model_done.tmp.$$"; fi
  return "$rc"
}
deploy_runs=0
if ((only == 0 && deploy == 1)) && [[ -z "$sanitize" && -z "${TXN_RECOVERY_TEST_URI:-}" ]] &&
  ((${#ctest_args[@]} == 0)); then
  deploy_runs=1
fi
if ((only == 0)) && [[ -z "$sanitize" ]] && ((deploy_runs == 0)); then
  model_check
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
embedded_state="$build_dir/testdb" # the ctest fixture's (tests/CMakeLists.txt)
docdb_state="$root/.cache/documentdb/run"
docdb_started=0
docdb_uri=""

stop_documentdb() {
  if ((docdb_started)); then
    "$root/scripts/testdb-stop.sh" --engine documentdb --state-dir "$docdb_state" || true
    docdb_started=0
  fi
}
trap stop_documentdb EXIT

# Starts DocumentDB, or makes sure it runs (after a crash: the gateway may be gone, and come
# back on another port; PostgreSQL restarts its backends itself). Sets docdb_uri; fails
# when the server cannot be had.
start_documentdb() {
  if [[ "${1:-}" != again ]] &&
    ! "$root/scripts/testdb-documentdb.sh" status --state-dir "$docdb_state" >/dev/null 2>&1; then
    docdb_started=1
  fi
  # The URI carries the generated password: kept in a variable and handed to ctest through
  # the environment, never argv.
  docdb_uri="$("$root/scripts/testdb-start.sh" --engine documentdb --state-dir "$docdb_state")" &&
    [[ "$docdb_uri" == mongodb://* ]]
}

# Log sizes at the start of a pass: only what the servers logged since is examined.
declare -A log_mark
mark_logs() {
  local f
  for f in "$docdb_state/postgres.log" "$docdb_state/gateway.log"; do
    log_mark[$f]="$(stat -c %s "$f" 2>/dev/null || echo 0)"
  done
}
since_mark() { # the part of log $1 written since mark_logs
  [[ -f "$1" ]] || return 0
  tail -c +"$((${log_mark[$1]:-0} + 1))" "$1"
}

# Prints why the server of pass $1 counts as crashed during it (with its last log lines),
# and succeeds; fails when it did not crash.
server_crashed() {
  local pass="$1" why="" pg gw
  case "$pass" in
    embedded)
      # Written by the fixture's cleanup when the server was gone before it (or logged the
      # JVM dying): tests/testdb_fixture.sh.
      [[ -s "$embedded_state/crashed" ]] || return 1
      cat "$embedded_state/crashed"
      return 0
      ;;
    documentdb)
      pg="$(since_mark "$docdb_state/postgres.log")"
      gw="$(since_mark "$docdb_state/gateway.log")"
      if grep -qE 'terminated by signal|terminated by exception|PANIC:|lost saved point in index|all server processes terminated' <<<"$pg"; then
        why="PostgreSQL logged a crash"
      elif ! "$root/scripts/testdb-documentdb.sh" status --state-dir "$docdb_state" >/dev/null 2>&1; then
        why="the gateway or PostgreSQL is no longer running"
      elif grep -qE 'panicked at|SIGSEGV|Segmentation fault' <<<"$gw"; then
        why="the gateway logged a crash"
      fi
      [[ -n "$why" ]] || return 1
      echo "$why. PostgreSQL's log ($docdb_state/postgres.log), its crash lines and last lines of this pass:"
      grep -E 'terminated by|PANIC|lost saved point|server processes|FATAL|segfault' <<<"$pg" | tail -n 15 | sed 's/^/  | /'
      echo "  ..."
      tail -n 10 <<<"$pg" | sed 's/^/  | /'
      echo "The gateway's last lines ($docdb_state/gateway.log):"
      tail -n 8 <<<"$gw" | sed 's/^/  | /'
      return 0
      ;;
  esac
  return 1
}

# One ctest pass against the engine $1; the rest of the arguments go to ctest. Run again,
# once, only when it failed because its server crashed.
run_pass() {
  local pass="$1" attempt crash
  shift
  for attempt in 1 2; do
    rm -f "$embedded_state/crashed"
    mark_logs
    if [[ "$pass" == documentdb ]]; then
      # Never empty: the ctest fixture would then start the embedded server instead.
      [[ -n "$docdb_uri" ]] || { echo "== documentdb: no URI" >&2; return 1; }
      export TXN_RECOVERY_TEST_URI="$docdb_uri"
      # The same server over TLS, for tests/stores/tls_test.cc (its URI names the CA; the other
      # engines have no TLS, and those tests skip there).
      TXN_RECOVERY_TEST_TLS_URI="$(cat "$docdb_state/testdb-tls.uri")"
      export TXN_RECOVERY_TEST_TLS_URI TXN_RECOVERY_TEST_TLS_CA="$docdb_state/tls/ca.pem"
      export TXN_RECOVERY_TEST_TLS_CLIENT_CERT="$docdb_state/tls/client.pem"
    fi
    if ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" --timeout 600 "$@" \
      ${ctest_args[@]+"${ctest_args[@]}"}; then
      ((attempt == 1)) || echo "== $pass: the rerun passed (the first run was lost to a server crash, above)"
      return 0
    fi
    if ! crash="$(server_crashed "$pass")"; then
      echo "== $pass: tests failed (the server did not crash: not run again)" >&2
      return 1
    fi
    echo "== $pass: the test server crashed during the pass; its failures are not test results." >&2
    echo "$crash" >&2
    if ((attempt == 2)); then
      echo "== $pass: the server crashed again in the rerun: giving up" >&2
      return 1
    fi
    echo "== $pass: running the pass once more" >&2
    if [[ "$pass" == documentdb ]] && ! start_documentdb again; then
      echo "== $pass: DocumentDB could not be started again" >&2
      return 1
    fi
  done
}

status=0
for engine in "${engines[@]}"; do
  case "$engine" in
    uri)
      echo "== tests against TXN_RECOVERY_TEST_URI"
      run_pass uri || status=1
      ;;
    embedded)
      echo "== tests (unit tests; database tests and chaos rounds on the embedded server)"
      pass_began="$(date +%s)"
      run_pass embedded || status=1
      if ((deploy_runs)); then
        model_check >"$build_dir/model-check.out" 2>&1 &
        model_pid=$!
        # The package CTest debian_package built in this pass, when it did; else the script
        # builds it itself.
        deb_args=()
        debs=("$build_dir"/packaging/deb/txn-recoveryd_*.deb)
        if [[ -f "${debs[0]}" ]] && (($(stat -c %Y "${debs[0]}") >= pass_began)); then
          deb_args=(--deb-dir "$build_dir/packaging/deb")
        fi
        rc=0
        # Bounded: a hang is a failure, and the pass stops what it started on TERM.
        BUILD_DIR="$build_dir" timeout 1200 "$root/scripts/run-deployed.sh" \
          ${deb_args[@]+"${deb_args[@]}"} || rc=$?
        ((rc != 124)) || echo "== deployment: did not finish within 20 minutes" >&2
        ((rc == 0 || rc == 77)) || status=1
        rc=0
        wait "$model_pid" || rc=$?
        cat "$build_dir/model-check.out"
        ((rc == 0)) || { echo "== model check: FAILED" >&2; status=1; }
      fi
      ;;
    documentdb)
      echo "== database tests and chaos rounds against DocumentDB"
      if ! start_documentdb; then
        echo "== documentdb: the server did not start (above)" >&2
        status=1
        continue
      fi
      run_pass documentdb -L '^database$' || status=1
      unset TXN_RECOVERY_TEST_URI TXN_RECOVERY_TEST_TLS_URI TXN_RECOVERY_TEST_TLS_CA \
        TXN_RECOVERY_TEST_TLS_CLIENT_CERT
      stop_documentdb
      # Through failovers: a replicated pair (--sync: no acknowledged write may be lost),
      # five failovers under the workers and daemons of a chaos round, the same invariants.
      # Only in a whole run (not with ctest arguments picking tests), and not under the
      # sanitizers (the daemons' code is the same; the round is about the database).
      if ((${#ctest_args[@]} == 0)) && [[ -z "$sanitize" ]]; then
        echo "== chaos round through 5 failovers of a replicated DocumentDB (--sync)"
        TXN_RECOVERY_CHAOS_NO_BUILD=1 BUILD_DIR="$build_dir" "$root/scripts/chaos.sh" --failover \
          --sync --failovers 5 --failover-every 3s --profile transfer --seed 1 \
          --quiesce-timeout 90s || status=1
      fi
      ;;
  esac
done
# The conformance check (docs/proof.md, "Conformance"): the crash-at-every-write tests run
# with the engine's trace on, on both engines, each transaction's trace replayed through
# model/recovery.pml by SPIN, and a chaos round of 20 s (three daemons, kills) on each;
# under two minutes. Only in a whole run, and not under the sanitizers (the same engine;
# the check is about the protocol).
if ((${#ctest_args[@]} == 0)) && [[ -z "$sanitize" && -z "${TXN_RECOVERY_TEST_URI:-}" ]]; then
  echo "== conformance: the engine's runs replayed through the model"
  conformance_args=()
  [[ " ${engines[*]} " != *" documentdb "* ]] || conformance_args+=(--documentdb)
  BUILD_DIR="$build_dir" "$root/scripts/conformance.sh" ${conformance_args[@]+"${conformance_args[@]}"} || status=1
fi
exit "$status"
