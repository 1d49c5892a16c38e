#!/usr/bin/env bash
# Runs txn-recoveryd as it ships, on this machine, offline, as root, against the embedded
# test database, and prints each check by name (docs/deploying.md, "What CI runs"):
#
#   systemd  the Debian package installed with apt into a fresh Debian 12 root file system
#            booted with systemd as PID 1 (systemd-nspawn --boot): installing starts and
#            enables nothing, the service becomes active only once it says READY=1, reads
#            its URI from /etc/credstore, resolves stuck transfers, reloads, survives a bad
#            file, is restarted by its watchdog when it hangs, drains on stop, runs its
#            sandbox; the timer's one-shot sweep runs clean.
#   image    packaging/Containerfile built with podman, offline, around the package's
#            binary (--target from-package): a one-shot sweep; the sidecar as uid 10001 on
#            a read-only root, its HEALTHCHECK, JSON logs, SIGTERM drained in time.
#   kube     deploy/kubernetes/sidecar.yaml and the Helm chart's rendered Deployment run
#            with `podman kube play` beside a stand-in application container: the probes
#            answer on the ports the manifests name, stuck transfers resolve.
#
# Usage: scripts/run-deployed.sh [--deb-dir DIR] [--only PART]... [--break FAULT]
#   --deb-dir DIR  take txn-recoveryd_*.deb from DIR (test.sh passes the one CTest
#                  debian_package built in the same run); default: scripts/package.sh
#                  builds it into build/deployed/deb (seconds through a warm ccache)
#   --only PART    systemd, image or kube (repeatable); default all three
#   -v, --verbose  print what each check saw, passed or not (a failure always shows it)
#   --break FAULT  the pass's own test: breaks one thing as a faulty change would, and the
#                  pass must then fail. FAULT: unit-no-ready (the service never reaches
#                  systemd with READY=1), image-config-unreadable (the image's user cannot
#                  read its configuration), manifest-probe-port (the sidecar's probes name a
#                  port nothing listens on)
# Environment: BUILD_DIR (default build/) holds the workload tool; TXN_RECOVERY_CACHE_DIR
# as in docs/test-engines.md: the root file systems are cached under its deployed/.
#
# Exit status: 0 every check passed; 1 a check failed; 77 this machine cannot run it (not
# root, no namespaces, no podman): "skipped: why" is printed, never a silent pass; 64 usage.
# Every container, pod and booted system it starts is stopped on every exit path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
cache="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}/deployed"
work="$build_dir/deployed"
mirror="${TXN_RECOVERY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=bookworm
deb_dir=""
verbose=0
parts=()
fault=""
while (($#)); do
  case "$1" in
    --deb-dir) deb_dir="$(realpath -m "$2")"; shift 2 ;;
    -v | --verbose) verbose=1; shift ;;
    --only)
      case "${2:-}" in systemd | image | kube) parts+=("$2") ;; *) echo "run-deployed: --only takes systemd, image or kube" >&2; exit 64 ;; esac
      shift 2
      ;;
    --break)
      case "${2:-}" in unit-no-ready | image-config-unreadable | manifest-probe-port) fault="$2" ;; *) echo "run-deployed: unknown --break '${2:-}'" >&2; exit 64 ;; esac
      shift 2
      ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 64 ;;
  esac
done
((${#parts[@]})) || parts=(systemd image kube)
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

skip() {
  echo "== deployment: skipped: $*"
  exit 77
}
((EUID == 0)) || skip "needs root (systemd-nspawn, podman as root); run it as root or in CI"
unshare --mount --pid --fork true 2>/dev/null || skip "this machine refuses new namespaces (unshare)"
for tool in debootstrap systemd-nspawn podman runc; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing (scripts/deps.sh --deploy installs it)"
done
workload="$build_dir/bench/txn-recovery-workload"
[[ -x "$workload" ]] || { echo "run-deployed: $workload is not built (scripts/build.sh)" >&2; exit 1; }

# podman as this machine allows it: runc (crun refuses its cgroup layout), cgroupfs (no host
# systemd), ulimits no higher than ours. Kept in a file of our own through CONTAINERS_CONF,
# which `podman kube play` reads too; the host's configuration is not touched.
rm -rf "$work/kube"
mkdir -p "$work" "$cache"
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$work/containers.conf"
label="io.txn-recoveryd.run-deployed=1"

# ---- results ---------------------------------------------------------------------------
passed=0
failed=0
failures=()
# check NAME FUNCTION [ARGS...]: runs FUNCTION, which explains a failure on stderr.
check() {
  local name="$1" out rc=0
  shift
  # In this shell, not a subshell: a check may set what later ones use.
  "$@" >"$work/check.out" 2>&1 || rc=$?
  out="$(cat "$work/check.out")"
  if ((rc == 0)); then
    passed=$((passed + 1))
    printf '  ok    %s\n' "$name"
    ((verbose == 0)) || [[ -z "$out" ]] || sed 's/^/        | /' <<<"$out" | tail -n 25
  else
    failed=$((failed + 1))
    failures+=("$name")
    printf '  FAIL  %s\n' "$name"
    [[ -z "$out" ]] || sed 's/^/        | /' <<<"$out" | tail -n 25
  fi
  last_rc=$rc
}
# A step the rest of a part needs: when it fails, the part stops there.
need() {
  check "$@"
  return "$last_rc"
}

# wait_for SECONDS FUNCTION [ARGS...]: until FUNCTION succeeds (its last stderr on timeout).
# FUNCTION runs in a subshell: what it sets is not kept.
wait_for() {
  local secs="$1" deadline out
  shift
  deadline=$((SECONDS + secs))
  while :; do
    if out="$("$@" 2>&1)"; then return 0; fi
    if ((SECONDS >= deadline)); then
      echo "not within ${secs}s: $out" >&2
      return 1
    fi
    sleep 0.5
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

http_status() { # URL: the HTTP status code, or 000
  curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" || true
}
metric() { # URL NAME: the value of an unlabelled sample
  curl -sf -m 5 "$1" | awk -v n="$2" '$1 == n { print $2 }'
}

# ---- cleanup, on every exit path ------------------------------------------------------
nspawn_pid=""
testdb_state="$work/testdb"
testdb_started=0
cleanup() {
  local rc=$?
  set +e
  if [[ -n "$nspawn_pid" ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" # nspawn asks the container's systemd to halt
    for _ in $(seq 40); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$nspawn_pid" 2>/dev/null
  fi
  if command -v podman >/dev/null 2>&1; then
    local m
    for m in "$work/kube/sidecar.yaml" "$work/kube/chart.yaml"; do
      [[ ! -f "$m" ]] || podman kube down "$m" >/dev/null 2>&1
    done
    podman secret rm txn-recoveryd txn-recoveryd-chart >/dev/null 2>&1
    podman pod ls -q --filter "label=$label" | xargs -r podman pod rm -f -t 0 >/dev/null 2>&1
    podman ps -aq --filter "label=$label" | xargs -r podman rm -f -t 0 >/dev/null 2>&1
  fi
  ((testdb_started == 0)) || "$root/scripts/testdb-stop.sh" --state-dir "$testdb_state" >/dev/null 2>&1
  rm -rf "$work/root"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- what every part needs -------------------------------------------------------------
echo "== deployment: the package, the image and the manifests as they ship (scripts/run-deployed.sh)"
start=$SECONDS
if [[ -z "$deb_dir" ]]; then
  deb_dir="$work/deb"
  echo "   building the Debian package (scripts/package.sh)"
  "$root/scripts/package.sh" --output "$deb_dir" --work-dir "$work/deb-build" >"$work/package.log" 2>&1 ||
    { tail -n 30 "$work/package.log"; echo "run-deployed: scripts/package.sh failed" >&2; exit 1; }
fi
debs=("$deb_dir"/txn-recoveryd_*_"$(dpkg --print-architecture)".deb)
[[ -f "${debs[0]}" && ${#debs[@]} -eq 1 ]] ||
  { echo "run-deployed: need exactly one txn-recoveryd_*.deb in $deb_dir" >&2; exit 1; }
deb="${debs[0]}"
echo "   package: $(basename "$deb")"

# The root file systems, made with debootstrap from the mirror apt uses, cached as tarballs:
# minbase (the image's base, as debian:bookworm-slim is) and minbase with systemd and dbus
# (the booted host). A fresh copy is unpacked for every run.
rootfs_tar() { # NAME EXTRA_PACKAGES: the path of the cached tarball, made when missing
  local name="$1" extra="$2" tar="$cache/$suite-$1.tar" tmp
  if [[ ! -s "$tar" ]]; then
    tmp="$cache/tmp.$name.$$"
    rm -rf "$tmp"
    if [[ "$name" == minbase ]]; then
      debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log" >&2; rm -rf "$tmp"; return 1; }
    else
      mkdir -p "$tmp"
      tar -C "$tmp" -xf "$(rootfs_tar minbase "")"
      systemd-nspawn -q -D "$tmp" --register=no --keep-unit --pipe \
        env DEBIAN_FRONTEND=noninteractive sh -c \
        "apt-get update -q && apt-get install -y -q --no-install-recommends $extra" \
        >"$work/rootfs-$name.log" 2>&1 ||
        { tail -n 20 "$work/rootfs-$name.log" >&2; rm -rf "$tmp"; return 1; }
    fi
    rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*_Packages
    tar -C "$tmp" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$tmp"
  fi
  echo "$tar"
}

# The test database: the embedded MongoDB-wire server on a free loopback port, which the
# booted system and the containers reach through the host's network.
uri="$("$root/scripts/testdb-start.sh" --port 0 --state-dir "$testdb_state")"
testdb_started=1
[[ "$uri" == mongodb://127.0.0.1:* ]] || { echo "run-deployed: the test database did not start" >&2; exit 1; }
echo "   test database: $uri"
wl() { TXN_RECOVERYD_MONGODB_URI="$uri" "$workload" "$@"; }
accounts=6
seed() { wl seed --database "$1" --accounts "$accounts" --per-step 2 --only-stuck >/dev/null; }
verified() { wl verify --database "$1" --accounts "$accounts" >&2; }

# A configuration for a test database: the documented thresholds (the seeded transfers are
# past them), a fast interval, the indexes made by the daemon. $1 the watch's database,
# $2 the [http] listen address, $3 the [mongodb] line that says where the URI is.
config_for() {
  local db="$1" listen="$2" where="$3"
  cat <<EOF
# written by scripts/run-deployed.sh
[mongodb]
$where
server_selection_timeout = "2s"

[sweep]
manage_indexes = true

[daemon]
interval = "1s"

[http]
listen = "$listen"

[[watch]]
name = "$db"
database = "$db"
profile = "transfer"
EOF
}

# ---- systemd ---------------------------------------------------------------------------
sd_root="$work/root"
sd_pid=""   # the container's systemd, as the host sees it
inside() { # runs a command in the booted system, as root
  nsenter -t "$sd_pid" -m -u -i -n -p -C -- \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SYSTEMD_PAGER= "$@"
}
prop() { inside systemctl show -p "$2" --value "$1"; }

boot() {
  local tar
  tar="$(rootfs_tar systemd "systemd systemd-sysv dbus")" || return 1
  rm -rf "$sd_root"
  mkdir -p "$sd_root"
  tar -C "$sd_root" -xf "$tar"
  echo deployed >"$sd_root/etc/hostname"
  systemd-nspawn -q -D "$sd_root" --boot --register=no --keep-unit --console=read-only \
    >"$work/boot.log" 2>&1 &
  nspawn_pid=$!
  find_init() {
    sd_pid="$(pgrep -P "$nspawn_pid" -x systemd || true)"
    [[ -n "$sd_pid" ]] || { echo "systemd-nspawn started no systemd" >&2; return 1; }
  }
  wait_for 20 find_init || { tail -n 20 "$work/boot.log" >&2; return 1; }
  find_init # wait_for ran it in a subshell
  local state
  state="$(inside timeout 60 systemctl is-system-running --wait || true)"
  [[ "$state" == running ]] || {
    echo "the booted system is '$state'; failed units:" >&2
    inside systemctl --failed --no-legend >&2
    return 1
  }
}

install_package() {
  cp "$deb" "$sd_root/root/"
  # node_exporter's textfile directory, as Debian's prometheus-node-exporter leaves it
  # (root's, 0755): the package must let the timer's sweep write there.
  install -d -m 0755 "$sd_root/var/lib/prometheus/node-exporter"
  # The mirror is the network's: one more try after a failed one, as a person would.
  local try
  for try in 1 2; do
    if inside env DEBIAN_FRONTEND=noninteractive sh -c \
      "apt-get update -q >/dev/null && apt-get install -y -q /root/$(basename "$deb")" >"$work/apt.log" 2>&1; then
      return 0
    fi
    ((try == 2)) || sleep 5
  done
  tail -n 20 "$work/apt.log" >&2
  return 1
}

conffile_mode() {
  local got
  got="$(inside stat -c '%a %U:%G' /etc/txn-recoveryd/txn-recoveryd.toml)"
  [[ "$got" == "640 root:txn-recoveryd" ]] || { echo "the configuration is $got" >&2; return 1; }
}

nothing_started() {
  local u state
  for u in txn-recoveryd.service txn-recoveryd-sweep.timer txn-recoveryd-sweep.service; do
    state="$(inside systemctl is-enabled "$u" 2>&1 || true)"
    [[ "$state" == disabled || "$state" == static ]] || { echo "$u is $state after installing" >&2; return 1; }
    state="$(inside systemctl is-active "$u" 2>&1 || true)"
    [[ "$state" == inactive ]] || { echo "$u is $state after installing" >&2; return 1; }
  done
  ! inside pgrep -x txn-recoveryd >/dev/null || { echo "a txn-recoveryd process runs after installing" >&2; return 1; }
}

sd_http=""
sd_db=deployed_systemd
configure_service() {
  sd_http="127.0.0.1:$(free_port)"
  # The file's URI names a port nothing listens on: only the credential can work.
  config_for "$sd_db" "$sd_http" 'uri = "mongodb://127.0.0.1:9/"' >"$sd_root/etc/txn-recoveryd/txn-recoveryd.toml"
  install -d -m 0700 "$sd_root/etc/credstore"
  (umask 077 && echo "$uri" >"$sd_root/etc/credstore/txn-recoveryd.mongodb-uri")
  if [[ "$fault" == unit-no-ready ]]; then
    # A daemon that never notifies: it runs without the notify socket.
    mkdir -p "$sd_root/etc/systemd/system/txn-recoveryd.service.d"
    printf '[Service]\nExecStart=\nExecStart=/usr/bin/env -u NOTIFY_SOCKET %s\nTimeoutStartSec=10s\n' \
      "/usr/sbin/txn-recoveryd run --config /etc/txn-recoveryd/txn-recoveryd.toml" \
      >"$sd_root/etc/systemd/system/txn-recoveryd.service.d/break.conf"
    inside systemctl daemon-reload
  fi
  inside txn-recoveryd check-config --config /etc/txn-recoveryd/txn-recoveryd.toml >/dev/null
}

started_after_ready() {
  # Type=notify: `systemctl start` returns once the daemon said READY=1 (or fails when it
  # never does: --break unit-no-ready). The journal's times cannot order the two: journald
  # stamps a line when it reads it, after systemd may have taken READY=1.
  local type access active sub status
  type="$(prop txn-recoveryd.service Type)"
  access="$(prop txn-recoveryd.service NotifyAccess)"
  [[ "$type/$access" == notify/main ]] || { echo "Type=$type NotifyAccess=$access" >&2; return 1; }
  inside systemctl enable --now txn-recoveryd.service >&2 || return 1
  active="$(prop txn-recoveryd.service ActiveState)"
  sub="$(prop txn-recoveryd.service SubState)"
  [[ "$active/$sub" == active/running ]] || { echo "the service is $active/$sub" >&2; return 1; }
  status="$(prop txn-recoveryd.service StatusText)"
  [[ -n "$status" ]] || { echo "no STATUS= reached systemd" >&2; return 1; }
  echo "StatusText: $status"
}

uri_from_credstore() {
  inside test -s /run/credentials/txn-recoveryd.service/mongodb-uri ||
    { echo "no credential mongodb-uri handed to the service" >&2; return 1; }
  local port="${uri##*:}"
  port="${port%%/*}"
  inside journalctl -u txn-recoveryd.service --no-pager -o cat | grep -q "database reachable at mongodb://127.0.0.1:$port" ||
    { echo "the service never reached the credential's database (127.0.0.1:$port)" >&2; return 1; }
}

resolves() { # DB: stuck transfers planted there end, within a minute
  seed "$1" || return 1
  wait_for 60 verified "$1"
}

journal_fields() {
  inside journalctl -u txn-recoveryd.service -o json --no-pager | python3 -c '
import json, sys
want = sys.argv[1]
for line in sys.stdin:
    e = json.loads(line)
    if e.get("WATCH") == want and e.get("TXN_ID"):
        print("e.g. WATCH=%s TXN_ID=%s: %s" % (e["WATCH"], e["TXN_ID"], e.get("MESSAGE")))
        sys.exit(0)
sys.exit("no journal entry carries WATCH=%s with a TXN_ID" % want)' "$sd_db"
}

reload_rereads() {
  local before after
  before="$(metric "http://$sd_http/metrics" txn_recoveryd_last_reload_success_timestamp_seconds)"
  # A second watch, on another database.
  config_for "$sd_db" "$sd_http" 'uri = "mongodb://127.0.0.1:9/"' >"$sd_root/etc/txn-recoveryd/txn-recoveryd.toml"
  printf '\n[[watch]]\nname = "%s_2"\ndatabase = "%s_2"\nprofile = "transfer"\n' \
    "$sd_db" "$sd_db" >>"$sd_root/etc/txn-recoveryd/txn-recoveryd.toml"
  sleep 1.1 # the timestamp has whole seconds
  inside systemctl reload txn-recoveryd.service >&2 || return 1
  moved() {
    after="$(metric "http://$sd_http/metrics" txn_recoveryd_last_reload_success_timestamp_seconds)"
    [[ -n "$after" && "$after" != "$before" ]] || { echo "the reload timestamp stayed at '$before'" >&2; return 1; }
  }
  wait_for 10 moved || return 1
  inside journalctl -u txn-recoveryd.service --no-pager -o cat | grep -q "configuration reloaded from .*: 2 watch" ||
    { echo "the journal does not say that 2 watches were read" >&2; return 1; }
}

bad_file_keeps_old() {
  echo 'this is [not toml' >"$sd_root/etc/txn-recoveryd/txn-recoveryd.toml"
  inside systemctl reload txn-recoveryd.service >&2 || true
  refused() {
    [[ "$(metric "http://$sd_http/metrics" txn_recoveryd_last_reload_successful)" == 0 ]] ||
      { echo "txn_recoveryd_last_reload_successful is not 0" >&2; return 1; }
  }
  wait_for 10 refused || return 1
  [[ "$(prop txn-recoveryd.service ActiveState)" == active ]] || { echo "the service is no longer active" >&2; return 1; }
  # The second watch, read by the last good file, still works.
  resolves "${sd_db}_2"
}

watchdog_restarts() {
  local dropin="$sd_root/etc/systemd/system/txn-recoveryd.service.d"
  mkdir -p "$dropin"
  # Shortened for the test: the shipped WatchdogSec=2min, and TimeoutAbortSec (by default
  # TimeoutStopSec, 15s: how long systemd waits after the watchdog's SIGABRT, which a
  # stopped process cannot act on, before SIGKILL).
  printf '[Service]\nWatchdogSec=3s\nTimeoutAbortSec=3s\n' >"$dropin/watchdog-test.conf"
  # The configuration back to a good one, since the restart reads the file.
  config_for "$sd_db" "$sd_http" 'uri = "mongodb://127.0.0.1:9/"' >"$sd_root/etc/txn-recoveryd/txn-recoveryd.toml"
  inside systemctl daemon-reload
  inside systemctl restart txn-recoveryd.service >&2 || return 1
  local pid restarts
  pid="$(prop txn-recoveryd.service MainPID)"
  restarts="$(prop txn-recoveryd.service NRestarts)"
  inside kill -STOP "$pid"
  back() {
    local now
    now="$(prop txn-recoveryd.service MainPID)"
    [[ "$(prop txn-recoveryd.service NRestarts)" -gt "$restarts" && "$now" != 0 && "$now" != "$pid" &&
      "$(prop txn-recoveryd.service ActiveState)" == active ]] || { echo "not restarted (MainPID $now)" >&2; return 1; }
  }
  wait_for 40 back || return 1
  inside journalctl -u txn-recoveryd.service --no-pager -o cat | grep -i "watchdog timeout" ||
    { echo "the journal does not say the watchdog fired" >&2; return 1; }
  echo "MainPID $pid stopped; restarted as $(prop txn-recoveryd.service MainPID), NRestarts $(prop txn-recoveryd.service NRestarts)"
  rm -f "$dropin/watchdog-test.conf"
  inside systemctl daemon-reload
  inside systemctl restart txn-recoveryd.service >&2
}

sandbox_in_force() {
  local pid status bad=0
  pid="$(prop txn-recoveryd.service MainPID)"
  status="$(inside cat "/proc/$pid/status")"
  grep -q '^CapEff:[[:space:]]*0000000000000000$' <<<"$status" || { echo "effective capabilities: $(grep ^CapEff <<<"$status")" >&2; bad=1; }
  grep -q '^CapBnd:[[:space:]]*0000000000000000$' <<<"$status" || { echo "bounding set: $(grep ^CapBnd <<<"$status")" >&2; bad=1; }
  grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$status" || { echo "NoNewPrivs is not set" >&2; bad=1; }
  grep -q '^Seccomp:[[:space:]]*2$' <<<"$status" || { echo "no seccomp filter: $(grep ^Seccomp: <<<"$status")" >&2; bad=1; }
  # In the service's own mount namespace, as root: /usr, /etc and /var are read-only.
  local d
  for d in /usr /etc /var; do
    if inside nsenter -t "$pid" -m -- /bin/sh -c "touch $d/.txn-recoveryd-probe" 2>/dev/null; then
      echo "$d is writable in the service's mount namespace" >&2
      bad=1
    fi
  done
  inside sh -c "grep -qv '^ *0 *0 *4294967295' /proc/$pid/uid_map" || { echo "no private user namespace" >&2; bad=1; }
  [[ "$(inside stat -c %U "/proc/$pid")" == txn-recoveryd ]] || { echo "not running as txn-recoveryd" >&2; bad=1; }
  ((bad == 0))
}

nothing_ignored() {
  # What systemd itself (PID 1) said about the units: a directive it could not apply in this
  # container would show here, and docs/deploying.md would have to say so.
  local all said
  all="$(inside journalctl -b --no-pager -o cat _PID=1 | grep -E 'txn-recoveryd(-sweep)?\.(service|timer)' || true)"
  [[ -n "$all" ]] || { echo "systemd logged nothing about the units: nothing to judge" >&2; return 1; }
  said="$(grep -iE 'ignor|not supported|unsupported|unknown|failed to' <<<"$all" || true)"
  [[ -z "$said" ]] || { echo "$said" >&2; return 1; }
  echo "$(wc -l <<<"$all") lines from systemd about the units, none of them a directive it could not apply"
}

security_exposure() {
  local pin report level
  pin="$(sed -n 's/^ *\[txn-recoveryd\.service\]=\([0-9]*\)$/\1/p' "$root/scripts/check-systemd-units.sh")"
  report="$(inside systemd-analyze security --no-pager txn-recoveryd.service 2>&1 || true)"
  level="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")"
  [[ -n "$level" ]] || { echo "$report" >&2; return 1; }
  echo "exposure $level (pinned at most $((pin / 10)).$((pin % 10)))"
  inside systemd-analyze security --threshold="$pin" txn-recoveryd.service >/dev/null 2>&1 ||
    { echo "exposure $level is above the pinned $((pin / 10)).$((pin % 10))" >&2; return 1; }
}

stop_drains() {
  inside systemctl stop txn-recoveryd.service >&2 || return 1
  local result status
  result="$(prop txn-recoveryd.service Result)"
  status="$(prop txn-recoveryd.service ExecMainStatus)"
  [[ "$result" == success && "$status" == 0 ]] || { echo "Result=$result, exit status $status" >&2; return 1; }
  inside journalctl -u txn-recoveryd.service --no-pager -o cat | tail -n 20 | grep -q "^stopped\|stopped$" ||
    { echo "the daemon did not log that it stopped" >&2; return 1; }
}

timer_sweep() {
  seed "$sd_db" || return 1
  inside systemctl start txn-recoveryd-sweep.service >&2 || true
  local result status
  result="$(prop txn-recoveryd-sweep.service Result)"
  status="$(prop txn-recoveryd-sweep.service ExecMainStatus)"
  [[ "$result" == success && "$status" == 0 ]] ||
    { echo "Result=$result, exit status $status"; inside journalctl -u txn-recoveryd-sweep.service --no-pager -o cat | tail -n 15; } >&2
  [[ "$result" == success && "$status" == 0 ]] || return 1
  verified "$sd_db" || return 1
  local prom="$sd_root/var/lib/prometheus/node-exporter/txn-recoveryd-sweep.prom"
  grep -q '^txn_recoveryd_oneshot_sweep_success 1$' "$prom" 2>/dev/null ||
    { echo "no successful run in node_exporter's textfile directory ($prom):"; cat "$prom"; } >&2
  grep -q '^txn_recoveryd_oneshot_sweep_success 1$' "$prom" 2>/dev/null || return 1
  inside systemctl enable --now txn-recoveryd-sweep.timer >&2 || return 1
  [[ "$(prop txn-recoveryd-sweep.timer ActiveState)" == active ]] || { echo "the timer is not active" >&2; return 1; }
}

run_systemd() {
  echo "-- systemd: the Debian package in a booted Debian 12 (systemd-nspawn --boot)"
  need "boot a fresh Debian 12 with systemd as PID 1" boot || return 0
  need "apt-get install ./$(basename "$deb") (dependencies resolved by apt)" install_package || return 0
  check "installing starts and enables nothing" nothing_started
  check "the configuration (it may hold a password) is 0640 root:txn-recoveryd" conffile_mode
  need "configuration written and accepted by check-config; URI in /etc/credstore" configure_service || return 0
  need "systemctl enable --now: active/running, only after READY=1" started_after_ready || return 0
  check "the URI read from /etc/credstore (LoadCredential=)" uri_from_credstore
  check "stuck transfers planted in the database resolved by the service" resolves "$sd_db"
  check "journal entries carry WATCH= and TXN_ID=" journal_fields
  check "systemctl reload re-reads the file (the reload metric moves)" reload_rereads
  check "a bad file on reload leaves the old configuration in force" bad_file_keeps_old
  check "a hung daemon (SIGSTOP) killed by the watchdog and restarted" watchdog_restarts
  check "the sandbox in force on the running daemon" sandbox_in_force
  check "systemd-analyze security of the installed unit at the documented exposure" security_exposure
  check "systemd applied every directive of the units (none ignored, none failed)" nothing_ignored
  check "systemctl stop drains and ends with Result=success" stop_drains
  check "the timer's one-shot sweep runs clean, its figures in node_exporter's directory" timer_sweep
}

# ---- the image -------------------------------------------------------------------------
image=localhost/txn-recoveryd:deployed
version="$(dpkg-deb -f "$deb" Version)"
img_dir="$work/image"

build_image() {
  if ! podman image exists docker.io/library/debian:bookworm-slim; then
    # No registry here: the base the Containerfile names, made from debootstrap's minbase.
    local tar
    tar="$(rootfs_tar minbase "")" || return 1
    podman import -q --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' "$tar" docker.io/library/debian:bookworm-slim >/dev/null || return 1
  fi
  local ctx="$work/image-context"
  rm -rf "$ctx"
  mkdir -p "$ctx/packaging"
  cp "$deb" "$ctx/"
  cp "$root/packaging/image-files.sh" "$ctx/packaging/"
  local try built=0
  for try in 1 2; do # its apt steps reach the mirror: one more try after a failed one
    if podman build --pull=never --network host --format docker --target from-package \
      -f "$root/packaging/Containerfile" --build-arg VERSION="${version%%-*}" \
      --build-arg REVISION="$(git -C "$root" describe --always --dirty --tags 2>/dev/null || echo unknown)" \
      -t "$image" "$ctx" >"$work/image-build.log" 2>&1; then
      built=1
      break
    fi
    ((try == 2)) || sleep 5
  done
  ((built)) || { tail -n 25 "$work/image-build.log" >&2; return 1; }
  local hc
  hc="$(podman image inspect --format '{{json .Config.Healthcheck}}' "$image")"
  [[ "$hc" == *livez* ]] || { echo "the image has no HEALTHCHECK: $hc" >&2; return 1; }
}

# run_container NAME DB [podman run options...] -- [image arguments]
img_db=deployed_image
img_port=""
container_files() { # DB: the configuration and the URI file for a container
  mkdir -p "$img_dir"
  config_for "$1" "127.0.0.1:$img_port" 'uri_file = "/run/secrets/txn-recoveryd/mongodb-uri"' \
    >"$img_dir/txn-recoveryd.toml"
  mkdir -p "$img_dir/secret"
  echo "$uri" >"$img_dir/secret/mongodb-uri"
  # Readable by the image's user, as a Secret mounted with fsGroup is; the broken variant
  # keeps the configuration to root alone.
  chmod 0644 "$img_dir/txn-recoveryd.toml" "$img_dir/secret/mongodb-uri"
  [[ "$fault" != image-config-unreadable ]] || chmod 0600 "$img_dir/txn-recoveryd.toml"
}
podman_run() { # [options...]: podman run with the image's files and this pass's label
  podman run --label "$label" --network host \
    -v "$img_dir/txn-recoveryd.toml:/etc/txn-recoveryd/txn-recoveryd.toml:ro" \
    -v "$img_dir/secret:/run/secrets/txn-recoveryd:ro" "$@"
}

no_config_refused() {
  local rc=0 out
  out="$(podman run --rm --label "$label" --network none "$image" run 2>&1)" || rc=$?
  ((rc == 64)) || { echo "exit $rc, not 64:"; tail -n 5 <<<"$out"; } >&2
  ((rc == 64)) && grep -q "/etc/txn-recoveryd/txn-recoveryd.toml" <<<"$out"
}

oneshot_sweep() {
  img_port="$(free_port)"
  container_files "$img_db"
  seed "$img_db" || return 1
  local rc=0
  podman_run --rm "$image" sweep >"$work/image-sweep.log" 2>&1 || rc=$?
  ((rc == 0)) || { echo "sweep exited $rc:"; tail -n 15 "$work/image-sweep.log"; } >&2
  ((rc == 0)) && verified "$img_db"
}

sidecar=txn-deployed-sidecar
sidecar_runs() {
  img_port="$(free_port)"
  container_files "$img_db"
  podman rm -f -t 0 "$sidecar" >/dev/null 2>&1 || true
  podman_run -d --name "$sidecar" --read-only -e TXN_RECOVERYD_HTTP_LISTEN="127.0.0.1:$img_port" \
    "$image" run >/dev/null || return 1
  live() { [[ "$(http_status "http://127.0.0.1:$img_port/livez")" == 200 ]] || { echo "/livez does not answer 200" >&2; podman logs --tail 5 "$sidecar" >&2; return 1; }; }
  wait_for 20 live
}

runs_confined() { # CONTAINER: as uid/gid 10001, on a read-only root
  local ctr="$1" pid ids
  pid="$(podman inspect --format '{{.State.Pid}}' "$ctr")"
  ids="$(awk '/^(Uid|Gid):/ { print $1, $2, $3, $4, $5 }' "/proc/$pid/status")"
  [[ "$ids" == $'Uid: 10001 10001 10001 10001\nGid: 10001 10001 10001 10001' ]] ||
    { echo "the daemon runs as:"$'\n'"$ids" >&2; return 1; }
  [[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$ctr")" == true ]] ||
    { echo "the root file system is not read-only" >&2; return 1; }
  # As root inside, so that only the read-only mount can refuse (podman's --read-only keeps
  # tmpfs on /tmp and /run, as a kubelet's emptyDir would).
  local d
  for d in /usr /etc /var/lib; do
    if podman exec --user root "$ctr" sh -c "echo > $d/.probe" 2>/dev/null; then
      echo "root in the container could write to $d" >&2
      return 1
    fi
  done
}

healthcheck_passes() {
  podman healthcheck run "$sidecar" >&2 || { echo "podman healthcheck run: unhealthy" >&2; return 1; }
}

json_logs() {
  podman logs "$sidecar" 2>&1 | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        e = json.loads(line)
    except ValueError:
        sys.exit("not JSON: " + line.strip()[:200])
    n += 1
if n == 0:
    sys.exit("no log lines")
print(n, "lines, each one JSON object")'
}

sigterm_drains() {
  local t0 t1 code deadline=8
  t0=$(date +%s.%N)
  podman stop -t 30 "$sidecar" >/dev/null || return 1
  t1=$(date +%s.%N)
  code="$(podman inspect --format '{{.State.ExitCode}}' "$sidecar")"
  [[ "$code" == 0 ]] || { echo "exit code $code"; podman logs --tail 10 "$sidecar"; } >&2
  [[ "$code" == 0 ]] || return 1
  python3 -c "import sys; d=$t1-$t0; print('stopped in %.1fs' % d); sys.exit(0 if d <= $deadline else 'over the drain deadline (${deadline}s)')"
}

run_image() {
  echo "-- image: packaging/Containerfile built with podman, run as a one-shot sweep and as a sidecar"
  need "podman build --format docker --target from-package (offline; HEALTHCHECK kept)" build_image || return 0
  check "without a mounted configuration it refuses to start (exit 64, naming the path)" no_config_refused
  check "a one-shot sweep resolves stuck transfers and exits 0" oneshot_sweep
  need "the sidecar starts (run, read-only root, host network)" sidecar_runs || return 0
  check "runs as uid 10001 on a read-only root file system" runs_confined "$sidecar"
  check "stuck transfers planted while it runs resolved" resolves "$img_db"
  check "its HEALTHCHECK passes" healthcheck_passes
  check "its logs are JSON, one object per line" json_logs
  check "SIGTERM drained within daemon.drain_deadline (8s), exit 0" sigterm_drains
}

# ---- the Kubernetes objects ------------------------------------------------------------
# podman kube play runs a Deployment's pod template with its ConfigMap volumes and security
# context. What it cannot do as a kubelet does, the pass does around it, and
# docs/deploying.md lists: the pods share the host's network (no bridge here), so one
# replica, the metrics port on loopback, and no `ports` (podman would map each to the
# host, which it refuses on the host's network); the Secret is a podman secret, its value
# written undecoded (podman 4.3 ignores stringData and does not decode data); the probes
# become curl health checks that no timer runs here (no host systemd) and the image has no
# curl, so the pass asks each probe's path on the port the manifest names.
kube_dir="$work/kube"
app_image=registry.example/bank-app:1.0
kube_db=bank # the database the shipped ConfigMap watches

stand_in_app() {
  podman image exists "$app_image" && return 0
  mkdir -p "$kube_dir/app"
  printf 'FROM docker.io/library/debian:bookworm-slim\nCMD ["sleep", "infinity"]\n' >"$kube_dir/app/Containerfile"
  podman build --pull=never --network none -q -t "$app_image" "$kube_dir/app" >/dev/null
}

# kube_manifest OUT SECRET_NAME FILES...: the objects of FILES made playable as said above;
# prints the sidecar's container name and its probes' URLs, one per line.
kube_manifest() {
  local out="$1" secret="$2"
  shift 2
  python3 - "$out" "$secret" "$fault" "$@" <<'PY'
import sys, yaml
out, secret, fault, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
docs = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
keep, probes, container_name = [], [], None
for d in docs:
    kind = d.get("kind")
    if kind == "ConfigMap":
        keep.append(d)
    elif kind == "Deployment":
        d["spec"]["replicas"] = 1
        pod = d["spec"]["template"]["spec"]
        pod["hostNetwork"] = True
        for c in pod["containers"]:
            if c.get("image", "").endswith("txn-recoveryd:deployed") or "txn-recoveryd" in c["name"]:
                container_name = c["name"]
                env = c.setdefault("env", [])
                env.append({"name": "TXN_RECOVERYD_HTTP_LISTEN", "value": "127.0.0.1:9464"})
                ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
                for kind_ in ("livenessProbe", "readinessProbe", "startupProbe"):
                    probe = c.get(kind_)
                    if not probe or "httpGet" not in probe:
                        continue
                    get = probe["httpGet"]
                    if fault == "manifest-probe-port":
                        get["port"] = 9465
                    port = get["port"]
                    port = ports.get(port, port) if isinstance(port, str) else port
                    probes.append("%s http://127.0.0.1:%s%s" % (kind_, port, get.get("path", "/")))
        # podman maps every containerPort to the host, which a pod on the host's network
        # cannot have; the probes' named ports were resolved above.
        for c in pod["containers"]:
            c.pop("ports", None)
        keep.append(d)
    elif kind == "Secret" and d["metadata"]["name"] == secret:
        pass  # made a podman secret by the caller
if container_name is None:
    sys.exit("no txn-recoveryd container in " + " ".join(files))
yaml.safe_dump_all(keep, open(out, "w"), sort_keys=False)
print(container_name)
print("\n".join(probes))
PY
}

# play NAME YAML SECRET_NAME: podman kube play with the URI as the podman secret the
# manifests' Secret volume reads; sets kube_container and kube_probes.
kube_container=""
kube_probes=()
play() {
  local name="$1" manifest="$2" secret="$3"
  podman secret rm "$secret" >/dev/null 2>&1 || true
  printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ndata:\n  mongodb-uri: "%s"\n' "$secret" "$uri" |
    podman secret create "$secret" - >/dev/null || return 1
  podman kube play --replace --log-driver k8s-file "$manifest" >"$kube_dir/$name.play.log" 2>&1 ||
    { cat "$kube_dir/$name.play.log" >&2; return 1; }
  # podman names a Deployment's container <deployment>-pod[-N]-<container>.
  kube_container="$(podman ps -a --format '{{.Names}}' | grep -E -- "-pod(-[0-9]+)?-$kube_container\$" | head -n1)"
  [[ -n "$kube_container" ]] || { echo "kube play made no container for the daemon" >&2; podman ps -a >&2; return 1; }
  running() {
    [[ "$(podman inspect --format '{{.State.Status}}' "$kube_container" 2>/dev/null)" == running ]] ||
      { echo "$kube_container is $(podman inspect --format '{{.State.Status}}' "$kube_container" 2>&1)" >&2; podman logs --tail 10 "$kube_container" >&2 2>&1; return 1; }
  }
  wait_for 20 running
}

probes_pass() {
  local line kind url code bad=0
  ((${#kube_probes[@]})) || { echo "the manifest has no HTTP probe" >&2; return 1; }
  for line in "${kube_probes[@]}"; do
    kind="${line%% *}"
    url="${line#* }"
    ok() { [[ "$(http_status "$url")" == 200 ]]; }
    if wait_for 20 ok 2>/dev/null; then
      echo "$kind: $url 200"
    else
      echo "$kind: $url answers $(http_status "$url"), not 200" >&2
      bad=1
    fi
  done
  ((bad == 0))
}

kube_down() {
  podman kube down "$1" >/dev/null 2>&1 || true
  podman secret rm "$2" >/dev/null 2>&1 || true
}

sidecar_manifest() {
  mkdir -p "$kube_dir"
  local info
  info="$(kube_manifest "$kube_dir/sidecar.yaml" txn-recoveryd \
    "$root/deploy/kubernetes/configmap.yaml" "$root/deploy/kubernetes/sidecar.yaml")" || return 1
  kube_container="$(head -n1 <<<"$info")"
  mapfile -t kube_probes < <(tail -n +2 <<<"$info")
  # The image names the manifest gives, for the images built here.
  podman tag "$image" "$(python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    for c in (d or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        if "txn-recoveryd" in c["name"]: print(c["image"])' "$root/deploy/kubernetes/sidecar.yaml")"
  play sidecar "$kube_dir/sidecar.yaml" txn-recoveryd
}

helm_bin=""
chart_manifest() {
  helm_bin="$("$root/scripts/helm.sh" 2>"$kube_dir/helm.log")" || { tail -n 10 "$kube_dir/helm.log" >&2; return 1; }
  local rendered="$kube_dir/chart-rendered.yaml" info
  "$helm_bin" template recovery "$root/deploy/helm/txn-recoveryd" \
    --set image.repository=localhost/txn-recoveryd --set image.tag=deployed \
    --set mongodbUri.existingSecret=txn-recoveryd-chart \
    >"$rendered" 2>"$kube_dir/helm-template.log" || { cat "$kube_dir/helm-template.log" >&2; return 1; }
  info="$(kube_manifest "$kube_dir/chart.yaml" txn-recoveryd-chart "$rendered")" || return 1
  kube_container="$(head -n1 <<<"$info")"
  mapfile -t kube_probes < <(tail -n +2 <<<"$info")
  play chart "$kube_dir/chart.yaml" txn-recoveryd-chart
}

run_kube() {
  echo "-- kube: deploy/kubernetes and the Helm chart with podman kube play"
  if ! podman image exists "$image"; then
    echo "  (the image part did not build the image: nothing to play)"
    failed=$((failed + 1))
    failures+=("kube: no image")
    return 0
  fi
  need "a stand-in for the application's container" stand_in_app || return 0
  if need "sidecar.yaml with configmap.yaml and the Secret: the pod runs" sidecar_manifest; then
    check "sidecar.yaml: its probes answer 200 on the ports it names" probes_pass
    check "sidecar.yaml: its securityContext in force (uid 10001, read-only root)" runs_confined "$kube_container"
    check "sidecar.yaml: stuck transfers resolved" resolves "$kube_db"
  fi
  kube_down "$kube_dir/sidecar.yaml" txn-recoveryd
  if need "the Helm chart rendered (helm template) with an existing Secret: the pod runs" chart_manifest; then
    check "the chart: its probes answer 200 on the ports it names" probes_pass
    check "the chart: its securityContext in force (uid 10001, read-only root)" runs_confined "$kube_container"
    check "the chart: stuck transfers resolved" resolves "$kube_db"
  fi
  kube_down "$kube_dir/chart.yaml" txn-recoveryd-chart
}

wants systemd && run_systemd
wants image && run_image
wants kube && run_kube

echo "== deployment: $passed passed, $failed failed ($((SECONDS - start))s)"
((failed == 0)) || { printf '   failed: %s\n' "${failures[@]}"; exit 1; }
