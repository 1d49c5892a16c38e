#!/usr/bin/env bash
# The DocumentDB engine of the test database: PostgreSQL 15 with Microsoft's DocumentDB
# extensions (pg_documentdb_core, pg_documentdb) behind DocumentDB's Rust gateway, which
# speaks the MongoDB wire protocol. Called by scripts/testdb-start.sh and
# scripts/testdb-stop.sh with `--engine documentdb`; usable directly:
#
#   scripts/testdb-documentdb.sh start [--port N] [--tls-port N] [--state-dir DIR]
#                                      [--replicated [--sync|--async]]
#   scripts/testdb-documentdb.sh start --build-only
#   scripts/testdb-documentdb.sh stop [--state-dir DIR]
#   scripts/testdb-documentdb.sh status [--state-dir DIR]   (prints the URI; exit 3 if not running)
#
#   --port N         the gateway's port on 127.0.0.1 (plain TCP); 0 (the default) picks a
#                    free one
#   --tls-port N     the TLS gateway's port (TLS required); 0 (the default) picks a free one
#   --state-dir DIR  PostgreSQL's data directory, sockets, logs, the TLS CA and certificate,
#                    the password and the URIs (default: .cache/documentdb/run at the repo root)
#   --replicated     two PostgreSQL nodes: a primary and a streaming-replication standby
#                    (made with pg_basebackup), the gateways in front of the primary;
#                    scripts/testdb-failover.sh kills the primary and promotes the standby
#   --sync           (with --replicated, the default) a commit waits for the standby
#                    (synchronous_standby_names = '*'): a failover loses no acknowledged write
#   --async          (with --replicated) it does not: a failover loses what the standby had
#                    not received
#   --build-only     install what is missing and build (fills the cache), then exit
#
# `start` installs the Debian packages it needs (only those missing; as root or through
# sudo), builds pg_cron and pgvector, the two DocumentDB extensions and the gateway from
# pinned tarballs (TXN_RECOVERY_VENDOR_DIR, by default ../shared/vendor beside the
# repository when it exists, else downloaded by pinned URL; sha256 verified either way),
# caches the results under CACHE/documentdb/artefacts/KEY (CACHE: $TXN_RECOVERY_CACHE_DIR,
# by default ${XDG_CACHE_HOME:-~/.cache}/txn-recoveryd, shared by every checkout of the
# user, so that a fresh clone such as CI's starts warm; KEY: the tarballs' sha256,
# PostgreSQL's major version, libbson's version and the recipe number below), with the
# gateway's cargo target directory and downloaded tarballs beside it; installs the extension files into
# PostgreSQL's lib and share directories when they differ, then runs PostgreSQL (Unix socket
# in the state dir only, no TCP) and two gateways (127.0.0.1 only, SCRAM-SHA-256): one
# speaking plain TCP, one requiring TLS with a certificate for 127.0.0.1 and localhost
# signed by a CA made for the state dir (STATE_DIR/tls/ca.pem), as an unprivileged user: the
# caller, or when the caller is root the system user txnrecovery-testdb (created if
# missing). It prints the plain URI and writes it to STATE_DIR/testdb.uri (0600), and the
# TLS one (`tls=true&tlsCAFile=STATE_DIR/tls/ca.pem`) to STATE_DIR/testdb-tls.uri (0600).
# Idempotent: with every server alive it prints the URI again and starts nothing. Any
# failure exits non-zero naming the step and its log.
#
# Environment: TESTDB_START_TIMEOUT (seconds to wait for each server, default 120),
# TXN_RECOVERY_VENDOR_DIR, TXN_RECOVERY_CACHE_DIR (see above).
set -euo pipefail
shopt -s inherit_errexit # die() in $(...) must end the script too

me=testdb-documentdb
# shellcheck source=scripts/testdb-documentdb-lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/testdb-documentdb-lib.sh"

action="${1:-}"
[[ "$action" == start || "$action" == stop || "$action" == status ]] || {
  echo "usage: $(basename "$0") start [--port N] [--tls-port N] [--state-dir DIR] [--replicated [--sync|--async]] [--build-only] | stop|status [--state-dir DIR]" >&2
  exit 64
}
shift
port=0
tls_port=0
state_dir="$root/.cache/documentdb/run"
build_only=0
replication=none
want_replication=""
timeout_s="${TESTDB_START_TIMEOUT:-120}"
while (($# > 0)); do
  case "$1" in
    --port) (($# >= 2)) || { echo "$me: --port needs a value" >&2; exit 64; }; port="$2"; shift 2 ;;
    --tls-port) (($# >= 2)) || { echo "$me: --tls-port needs a value" >&2; exit 64; }; tls_port="$2"; shift 2 ;;
    --state-dir) (($# >= 2)) || { echo "$me: --state-dir needs a value" >&2; exit 64; }; state_dir="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --replicated) [[ -n "$want_replication" ]] || want_replication=sync; shift ;;
    --sync | --async)
      [[ " $* " == *" --replicated "* || -n "$want_replication" ]] ||
        { echo "$me: $1 goes with --replicated" >&2; exit 64; }
      want_replication="${1#--}"
      shift
      ;;
    --owner-pid)
      echo "$me: --owner-pid is not supported by the documentdb engine; stop it with scripts/testdb-stop.sh --engine documentdb" >&2
      exit 64
      ;;
    *) echo "$me: unknown argument: $1" >&2; exit 64 ;;
  esac
done
for p in "$port" "$tls_port"; do
  if [[ ! "$p" =~ ^[0-9]+$ ]] || ((p > 65535)); then
    echo "$me: bad port: $p" >&2
    exit 64
  fi
done
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "$me: bad TESTDB_START_TIMEOUT: $timeout_s" >&2; exit 64; }

stop_all() {
  local node
  stop_gateway gateway
  stop_gateway gateway-tls
  if [[ -f "$state_dir/replicated" ]]; then
    for node in n1 n2; do
      use_node "$state_dir/$node"
      stop_postgres
    done
  else
    use_node "$state_dir"
    stop_postgres
  fi
  rm -f "$state_dir/testdb.uri" "$state_dir/testdb-tls.uri"
}

# The node the gateways are in front of (the state dir itself, without --replicated).
use_primary() {
  if [[ -f "$state_dir/replicated" ]]; then
    use_node "$state_dir/$(cat "$state_dir/primary" 2>/dev/null || echo n1)"
  else
    use_node "$state_dir"
  fi
}

if [[ "$action" == start ]]; then
  artefacts="$(ensure_built)"
  ((build_only == 0)) || exit 0
fi

if [[ "$action" != start && ! -d "$state_dir" ]]; then
  echo "$me: nothing running (no $state_dir)"
  [[ "$action" == stop ]] && exit 0
  exit 3
fi
if [[ "$action" == status ]]; then
  state_dir="$(cd "$state_dir" && pwd)"
  ((EUID == 0)) || svc_user="$(id -un)"
  if ((EUID == 0)) && ! getent passwd "$svc_user" >/dev/null; then
    echo "$me: not running (no user $svc_user)"
    exit 3
  fi
  svc_prefix=()
  use_primary
  p="$(uri_port "$state_dir/testdb.uri")"
  if [[ "$p" =~ ^[0-9]+$ ]] && gateway_pid gateway >/dev/null && gateway_pid gateway-tls >/dev/null &&
    postgres_alive && port_open "$p"; then
    cat "$state_dir/testdb.uri"
    exit 0
  fi
  echo "$me: not running"
  exit 3
fi
enter_state_dir

if [[ "$action" == stop ]]; then
  stop_all
  exit 0
fi

# One node or two, as the state dir was made: to change, stop and use another state dir.
if [[ -f "$state_dir/replicated" ]]; then
  replication="$(cat "$state_dir/replicated")"
  [[ -z "$want_replication" || "$want_replication" == "$replication" ]] ||
    die "step 'state dir': $state_dir holds a --replicated --$replication pair, not --$want_replication; use another --state-dir"
elif [[ -n "$want_replication" ]]; then
  [[ ! -d "$state_dir/pgdata" ]] ||
    die "step 'state dir': $state_dir holds a single node; use another --state-dir for --replicated"
  replication="$want_replication"
else
  [[ ! -d "$state_dir/n1" ]] ||
    die "step 'state dir': $state_dir holds a --replicated pair whose mode is unknown; remove it"
fi

uri_of() { # PORT [OPTIONS]
  echo "mongodb://$db_user:$(cat "$state_dir/password")@127.0.0.1:$1/?authSource=admin&authMechanism=SCRAM-SHA-256${2:+&$2}"
}
tls_options="tls=true&tlsCAFile=$state_dir/tls/ca.pem"

# Already running?
use_primary
if [[ -f "$state_dir/testdb.uri" && -f "$state_dir/testdb-tls.uri" ]] && gw="$(gateway_pid gateway)" &&
  gateway_pid gateway-tls >/dev/null && postgres_alive; then
  old_port="$(uri_port "$state_dir/testdb.uri")"
  old_tls_port="$(uri_port "$state_dir/testdb-tls.uri")"
  if [[ "$old_port" =~ ^[0-9]+$ && "$old_tls_port" =~ ^[0-9]+$ ]] && port_open "$old_port" &&
    port_open "$old_tls_port" && ((port == 0 || port == old_port)) &&
    ((tls_port == 0 || tls_port == old_tls_port)); then
    cat "$state_dir/testdb.uri"
    exit 0
  fi
  if port_open "$port"; then
    die "step 'start gateway': port $port on 127.0.0.1 is in use (the running gateway, pid $gw, is left alone)"
  fi
  note "replacing the running gateways: they do not listen on the ports asked for"
fi
stop_gateway gateway >/dev/null
stop_gateway gateway-tls >/dev/null
rm -f "$state_dir/testdb.uri" "$state_dir/testdb-tls.uri"

# Secrets and certificates, once per state dir.
if [[ ! -s "$state_dir/password" ]]; then
  (umask 077 && openssl rand -hex 24 >"$state_dir/password.tmp") || die "step 'password': openssl rand failed"
  mv "$state_dir/password.tmp" "$state_dir/password"
fi
make_certificates
rm -f "$state_dir/cert.pem" "$state_dir/key.pem" # the self-signed pair of older versions
if ((EUID == 0)); then
  chown -R "$svc_user:" "$state_dir"
fi
chmod 0600 "$state_dir/password" "$state_dir/tls/server.key"

# A new cluster (the primary's, with --replicated), or the one there started again.
start_first_node() {
  if [[ ! -f "$state_dir/initialized" || ! -f "$pgdata/PG_VERSION" ]]; then
    if [[ -f "$pgdata/postmaster.pid" ]]; then
      as_svc "$pg_bin/pg_ctl" -D "$pgdata" -m immediate -s stop >/dev/null 2>&1 || true
    fi
    rm -f "$state_dir/initialized"
    [[ "$replication" == none ]] || as_svc mkdir -p "$node_dir"
    init_cluster
    start_postgres
    setup_database
  else
    start_postgres
  fi
}

if [[ "$replication" == none ]]; then
  start_first_node
else
  # A new pair: n1 the primary, n2 its copy. An existing one: the recorded primary, then
  # the other node as its standby.
  sync_standby=on
  if [[ ! -f "$state_dir/initialized" ]]; then
    rm -rf "$state_dir/n1" "$state_dir/n2"
    echo n1 >"$state_dir/primary"
    sync_standby=off # until the standby streams (write_postgres_config)
  fi
  echo "$replication" >"$state_dir/replicated"
  primary="$(cat "$state_dir/primary")"
  standby="$(other_node "$primary")"
  use_node "$state_dir/$primary"
  start_first_node
  point_gateway_at "$primary"
  use_node "$state_dir/$standby"
  sync_standby=on # the standby's own settings, for the day it is promoted
  if ! postgres_alive; then
    [[ -f "$pgdata/PG_VERSION" ]] || clone_node "$standby" "$primary"
    start_postgres "$state_dir/$primary/sock"
  fi
  use_node "$state_dir/$primary"
  wait_streaming
  if [[ ! -f "$state_dir/streamed" ]]; then
    write_postgres_config
    step "reload $primary" "$state_dir/pg_ctl.log" as_svc "$pg_bin/pg_ctl" -D "$pgdata" -s reload
    touch "$state_dir/streamed"
  fi
fi

# The service user may not be able to reach the build cache (a home directory of mode
# 0700): the gateway runs from the state dir's own copy.
if ! cmp -s "$artefacts/bin/documentdb_gateway" "$state_dir/documentdb_gateway"; then
  install -m 0755 "$artefacts/bin/documentdb_gateway" "$state_dir/documentdb_gateway.tmp"
  mv -f "$state_dir/documentdb_gateway.tmp" "$state_dir/documentdb_gateway"
fi
gw_port=""
start_gateway gateway-tls "$tls_port" true
(umask 077 && uri_of "$gw_port" "$tls_options" >"$state_dir/testdb-tls.uri.tmp")
mv "$state_dir/testdb-tls.uri.tmp" "$state_dir/testdb-tls.uri"
start_gateway gateway "$port" false
uri="$(uri_of "$gw_port")"
(umask 077 && echo "$uri" >"$state_dir/testdb.uri.tmp")
mv "$state_dir/testdb.uri.tmp" "$state_dir/testdb.uri"
echo "$uri"
