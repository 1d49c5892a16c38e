# The DocumentDB test engine's shared functions (sourced, not run): building PostgreSQL's
# DocumentDB extensions and the gateway into the cache, and running a PostgreSQL node and
# the gateways from a state dir. Used by scripts/testdb-documentdb.sh (start, stop, status;
# one node, or a primary and a streaming standby with --replicated) and
# scripts/testdb-failover.sh. The caller sets `me` (the name its messages start with),
# `state_dir` and `timeout_s` before calling them.
# shellcheck shell=bash

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
# What is built is shared by every checkout (a fresh clone finds it warm); what runs is the
# checkout's own (state dir).
cache="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}/documentdb"

# Pinned sources: name, tarball, upstream commit, sha256 of the vendored `git archive`
# tarball, and sha256 of its contents (every file's path below the top directory and
# sha256, sorted), which also verifies GitHub's own archive of the same commit (its
# compression and top directory differ, its files do not).
pg_major=15
svc_user=txnrecovery-testdb
db_user=txnrecovery
recipe=1 # bump when the build commands change: the cache key includes it
sources=(
  "documentdb documentdb-b2e220c4.tar.gz microsoft/documentdb b2e220c47d85ec6fed1651f03968da2317f71c10 e8a540f4520263ceb0726b7a86ec9ac11b26322776993cc0f14dbfefddb2378c 60bf6ebf2844cf9aca09b7f143070c37602627f2695117f5f392d084f9b2c6cc"
  "pg_cron pg_cron-1.6.3.tar.gz citusdata/pg_cron 9d0576c64edd90fb3d8ac30763296a8106315638 105b669241ea200f0e9a5ffbc2c4e8c33b0dfaba2b13e06cdb4621382b7995d5 a6b22de15c274bc02f367525aef8d218467968e827a2d1d79a35f4bac6071f17"
  "pgvector pgvector-0.8.0.tar.gz pgvector/pgvector 2627c5ff775ae6d7aef0c430121ccf857842d2f2 f735d37c1f8a32a0c46f29db63860bdc1ed06a423d4280767afbd38f1fe58778 f0af6d267dcdc82ff2b5a39f0be85c90ea549f6ab0c4d96d8a5c03bd2e525fac"
)
apt_packages=(
  build-essential pkg-config curl ca-certificates openssl python3 util-linux
  "postgresql-$pg_major" "postgresql-server-dev-$pg_major" "postgresql-$pg_major-postgis-3"
  "postgresql-$pg_major-rum" libbson-dev libintelrdfpmath-dev libpcre2-dev libkrb5-dev
  libssl-dev
)
rust_min=1.75


die() {
  echo "${me:-testdb-documentdb}: $*" >&2
  exit 1
}
note() { echo "${me:-testdb-documentdb}: $*" >&2; }

# The last lines of a log file, joined into one line.
tail_of() {
  local text=""
  if [[ -s "$1" ]]; then
    text="$(tail -n 8 "$1" | sed -e '/^[[:space:]]*$/d' | paste -s -d '|' - | sed -e 's/|/ | /g')"
  fi
  echo "${text:-(empty)}"
}

# Runs "$@" with output to log $1 (after shifting), dying with the step's name on failure.
#   step NAME LOG CMD...
step() {
  local name="$1" log="$2"
  shift 2
  if ! "$@" >>"$log" 2>&1; then
    die "step '$name' failed (log $log): $(tail_of "$log")"
  fi
}

as_root=()
need_root() { # sets as_root, or dies naming what needed root
  if ((EUID == 0)); then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    die "step '$1': needs root and there is no sudo; $2"
  fi
}

pg_bin="/usr/lib/postgresql/$pg_major/bin"
pg_config="$pg_bin/pg_config"

# ---------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------

ensure_packages() {
  local pkg status missing=()
  for pkg in "${apt_packages[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == installed ]] || missing+=("$pkg")
  done
  ((${#missing[@]} > 0)) || return 0
  need_root apt "install these packages: ${missing[*]}"
  note "installing ${missing[*]} (log $cache/logs/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  step apt "$cache/logs/apt.log" "${as_root[@]}" apt-get update -q
  step apt "$cache/logs/apt.log" "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ensure_rust() {
  local version
  command -v cargo >/dev/null 2>&1 ||
    die "step 'rust': cargo not found; the gateway needs Rust >= $rust_min (rustup.rs; Debian 12's rustc is too old)"
  version="$(rustc --version 2>/dev/null | awk '{print $2}')"
  [[ -n "$version" ]] || die "step 'rust': rustc --version printed nothing"
  if [[ "$(printf '%s\n%s\n' "$rust_min" "$version" | sort -V | head -n 1)" != "$rust_min" ]]; then
    die "step 'rust': rustc $version is older than $rust_min, which the gateway needs"
  fi
}

# sha256 of a tarball's contents: each regular file's path below the top directory and its
# sha256, sorted. The same for `git archive` and GitHub's archive of one commit.
content_sha256() {
  local dir
  dir="$(mktemp -d)"
  tar -xzf "$1" -C "$dir" --strip-components=1 || { rm -rf "$dir"; return 1; }
  (cd "$dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
  rm -rf "$dir"
}

vendor_dir() {
  if [[ -n "${TXN_RECOVERY_VENDOR_DIR:-}" ]]; then
    [[ -d "$TXN_RECOVERY_VENDOR_DIR" ]] || die "step 'sources': TXN_RECOVERY_VENDOR_DIR=$TXN_RECOVERY_VENDOR_DIR is not a directory"
    echo "$TXN_RECOVERY_VENDOR_DIR"
  elif [[ -d "$root/../shared/vendor" ]]; then
    (cd "$root/../shared/vendor" && pwd)
  fi
}

# Prints the path of a verified tarball for one entry of $sources.
fetch_source() {
  local name="$1" file="$2" repo="$3" commit="$4" sha="$5" content="$6" vendor path actual
  vendor="$(vendor_dir)"
  if [[ -n "$vendor" && -f "$vendor/$file" ]]; then
    path="$vendor/$file"
  else
    path="$cache/downloads/$file"
    if [[ ! -f "$path" ]]; then
      mkdir -p "$cache/downloads"
      local url="https://github.com/$repo/archive/$commit.tar.gz"
      note "downloading $name from $url"
      curl -fsSL --retry 3 -o "$path.tmp" "$url" >>"$cache/logs/download.log" 2>&1 ||
        die "step 'sources': cannot download $url (log $cache/logs/download.log); set TXN_RECOVERY_VENDOR_DIR to a directory holding $file"
      mv "$path.tmp" "$path"
    fi
  fi
  actual="$(sha256sum <"$path" | cut -d' ' -f1)"
  if [[ "$actual" != "$sha" ]]; then
    actual="$(content_sha256 "$path")" || die "step 'sources': $path is not a gzip tarball"
    [[ "$actual" == "$content" ]] ||
      die "step 'sources': $path fails verification (sha256 is neither $sha nor, of its contents, $content)"
  fi
  echo "$path"
}

extract() { # tarball dir
  rm -rf "$2"
  mkdir -p "$2"
  tar -xzf "$1" -C "$2" --strip-components=1
}

build_all() {
  local key="$1" out="$2" build="$cache/build" log="$cache/logs/build.log" stage multiarch
  local -A tarball
  local entry fields
  for entry in "${sources[@]}"; do
    read -r -a fields <<<"$entry"
    tarball[${fields[0]}]="$(fetch_source "${fields[@]}")"
  done
  : >"$log"
  rm -rf "$out.tmp"
  stage="$out.tmp/stage"
  mkdir -p "$stage" "$out.tmp/bin" "$build"
  note "building pg_cron, pgvector, the DocumentDB extensions and gateway (log $log)"

  extract "${tarball[pg_cron]}" "$build/pg_cron"
  step "build pg_cron" "$log" make -C "$build/pg_cron" -j2 PG_CONFIG="$pg_config" with_llvm=no
  step "build pg_cron" "$log" make -C "$build/pg_cron" install PG_CONFIG="$pg_config" with_llvm=no DESTDIR="$stage"

  extract "${tarball[pgvector]}" "$build/pgvector"
  step "build pgvector" "$log" make -C "$build/pgvector" -j2 PG_CONFIG="$pg_config" with_llvm=no OPTFLAGS=""
  step "build pgvector" "$log" make -C "$build/pgvector" install PG_CONFIG="$pg_config" with_llvm=no DESTDIR="$stage"

  # DocumentDB looks the Intel decimal library up as `pkg-config intelmathlib`; Debian
  # ships it (call by value, no global rounding or flags: libbidgcc000) without a .pc file.
  multiarch="$(gcc -print-multiarch)"
  [[ -f "/usr/lib/$multiarch/libbidgcc000.a" ]] || die "step 'build documentdb': /usr/lib/$multiarch/libbidgcc000.a missing (package libintelrdfpmath-dev)"
  mkdir -p "$build/pkgconfig"
  cat >"$build/pkgconfig/intelmathlib.pc" <<EOF
Name: intelmathlib
Description: Intel Decimal Floating-Point Math Library (Debian's libbidgcc000)
Version: 2.0u2
Cflags:
Libs: /usr/lib/$multiarch/libbidgcc000.a
EOF
  extract "${tarball[documentdb]}" "$build/documentdb"
  # libbson 1.23 has no BSON_SUBTYPE_SENSITIVE (0x08, added in 1.24).
  local docdb_make=(make -C "$build/documentdb" PG_CONFIG="$pg_config" with_llvm=no
    "COPT=-DBSON_SUBTYPE_SENSITIVE=0x08 -Wno-error=switch")
  PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
    step "build documentdb extensions" "$log" "${docdb_make[@]}" -j2 install-no-distributed DESTDIR="$stage"

  (
    cd "$build/documentdb/pg_documentdb_gw"
    CARGO_TARGET_DIR="$cache/cargo-target" step "build gateway" "$log" cargo build --release --locked -j 2
  )
  cp "$cache/cargo-target/release/documentdb_gateway" "$out.tmp/bin/documentdb_gateway"
  chmod 0755 "$out.tmp/bin/documentdb_gateway"
  (cd "$stage" && find . -type f | LC_ALL=C sort) >"$out.tmp/files"
  grep -q "/lib/pg_documentdb.so$" "$out.tmp/files" || die "step 'build documentdb extensions': no pg_documentdb.so was installed (log $log)"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  rm -rf "$build"
}

# Copies the staged extension files into PostgreSQL's directories where they differ.
install_extension_files() {
  local out="$1" file differ=()
  while IFS= read -r file; do
    file="${file#.}"
    cmp -s "$out/stage$file" "$file" || differ+=("$file")
  done <"$out/files"
  ((${#differ[@]} > 0)) || return 0
  need_root "install extension files" "copy $out/stage/* into / (${#differ[@]} files)"
  note "installing ${#differ[@]} extension files into PostgreSQL's directories"
  for file in "${differ[@]}"; do
    step "install extension files" "$cache/logs/install.log" "${as_root[@]}" install -D -m 0644 "$out/stage$file" "$file"
  done
}

# Makes sure everything is built and installed; prints the artefact directory.
ensure_built() {
  local key_input key out entry fields bson_version other
  mkdir -p "$cache/logs"
  exec 8>"$cache/build.lock"
  flock 8
  ensure_packages
  [[ -x "$pg_config" ]] || die "step 'postgresql': $pg_config missing (package postgresql-server-dev-$pg_major)"
  bson_version="$(pkg-config --modversion libbson-static-1.0 2>/dev/null)" ||
    die "step 'libbson': pkg-config knows no libbson-static-1.0 (package libbson-dev)"
  key_input="recipe $recipe; postgresql $("$pg_config" --version | awk '{print $2}' | cut -d. -f1); libbson $bson_version"
  for entry in "${sources[@]}"; do
    read -r -a fields <<<"$entry"
    key_input+="; ${fields[1]} ${fields[4]}"
  done
  key="$(echo "$key_input" | sha256sum | cut -c1-16)"
  out="$cache/artefacts/$key"
  if [[ ! -f "$out/files" || ! -x "$out/bin/documentdb_gateway" ]]; then
    ensure_rust
    build_all "$key" "$out"
    echo "$key_input" >"$out/key"
  fi
  # The cache is shared by every checkout, and two branches may want two keys at once:
  # only artefacts no start has used for 30 days are stale.
  touch "$out/used"
  for other in "$cache/artefacts"/*; do
    [[ -d "$other" && "$other" != "$out" ]] || continue
    if [[ ! -f "$other/used" || -n "$(find "$other/used" -mtime +30)" ]]; then rm -rf "$other"; fi
  done
  install_extension_files "$out"
  exec 8>&-
  echo "$out"
}

# ---------------------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------------------

# Runs "$@" as the unprivileged service user (as is when we are not root).
as_svc() {
  if ((EUID == 0)); then
    setpriv --reuid="$svc_user" --regid="$svc_user" --init-groups \
      env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ LANG=C.UTF-8 "$@"
  else
    "$@"
  fi
}

ensure_svc_user() {
  if ((EUID != 0)); then
    svc_user="$(id -un)"
    return 0
  fi
  getent passwd "$svc_user" >/dev/null ||
    step "create user $svc_user" "$cache/logs/useradd.log" \
      useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$svc_user"
}

pid_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

port_open() {
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# A port nobody listens on (the gateway's bind is the real test: start retries on a race).
free_port() {
  local p i
  for ((i = 0; i < 50; i++)); do
    p=$((20000 + RANDOM % 40000))
    port_open "$p" || { echo "$p"; return 0; }
  done
  die "step 'pick port': no free port found"
}


# A PostgreSQL node: its directory holds pgdata/, sock/ (its Unix socket, the only way in)
# and postgres.log. One node: the state dir itself (as before --replicated existed);
# replicated: STATE_DIR/n1 and STATE_DIR/n2.
use_node() {
  node_dir="$1"
  pgdata="$node_dir/pgdata"
  sock="$node_dir/sock"
  pg_log="$node_dir/postgres.log"
  (("${#sock}" + 20 < 107)) || die "step 'state dir': $sock is too long for a Unix socket path"
}
pg_port=5432 # names the socket file only: PostgreSQL listens on no TCP port

postmaster_pid() { # prints the pid of the postmaster recorded in the data dir, if it runs
  local pid
  [[ -f "$pgdata/postmaster.pid" ]] || return 1
  pid="$(head -n 1 "$pgdata/postmaster.pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] && pid_running "$pid" && echo "$pid"
}

postmaster_running() { postmaster_pid >/dev/null; }

postgres_alive() { # the postmaster recorded in the data dir runs and answers
  postmaster_running || return 1
  as_svc "$pg_bin/pg_isready" -q -h "$sock" -p "$pg_port" -d postgres
}

# The gateways: `gateway` speaks plain TCP (the URI in testdb.uri), `gateway-tls` only TLS
# (testdb-tls.uri), both in front of STATE_DIR/sock: the node's socket directory, or with
# --replicated a symbolic link to the primary's.
gateway_pid() { # NAME: prints the live gateway's pid
  local name="${1:-gateway}" pid
  pid="$(cat "$state_dir/$name.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && pid_running "$pid" &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "documentdb_gateway $state_dir/$name.json" &&
    echo "$pid"
}

psql_svc() { # psql as the superuser, SQL on stdin
  as_svc "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$pg_port" -d postgres "$@"
}

init_cluster() {
  local log="$state_dir/postgres-init.log"
  note "creating a PostgreSQL $pg_major cluster in $pgdata"
  rm -rf "$pgdata"
  : >"$log"
  step initdb "$log" as_svc "$pg_bin/initdb" -D "$pgdata" -A trust -E UTF8 --locale=C.UTF-8 --no-instructions
  echo "include = 'txnrecovery.conf'" | as_svc tee -a "$pgdata/postgresql.conf" >/dev/null
  # Replication connections (pg_basebackup, a standby's walreceiver, pg_rewind) come over
  # the same private sockets.
  printf 'local all all trust\nlocal replication all trust\n' | as_svc tee "$pgdata/pg_hba.conf" >/dev/null
}

# SCRAM-SHA-256 verifier of the password in file $1, with a 28-byte salt (libmongoc 1.23
# rejects PostgreSQL's own 16-byte salts). The password is read from the file, never argv.
scram_verifier() {
  python3 - "$1" <<'EOF'
import base64, hashlib, hmac, os, sys
password = open(sys.argv[1], "rb").read().strip()
salt, iterations = os.urandom(28), 4096
salted = hashlib.pbkdf2_hmac("sha256", password, salt, iterations)
client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
stored_key = hashlib.sha256(client_key).digest()
server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
b64 = lambda b: base64.b64encode(b).decode()
print(f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}")
EOF
}

setup_database() {
  local log="$state_dir/postgres-init.log" verifier
  note "creating the documentdb extension and the role $db_user"
  step "create extension documentdb" "$log" psql_svc -c "CREATE EXTENSION IF NOT EXISTS documentdb CASCADE"
  verifier="$(scram_verifier "$state_dir/password")" || die "step 'scram verifier': python3 failed"
  # The verifier goes through stdin, not argv.
  step "create role $db_user" "$log" psql_svc <<EOF
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$db_user') THEN
    CREATE ROLE $db_user WITH LOGIN INHERIT CREATEROLE IN ROLE documentdb_admin_role;
  END IF;
END \$\$;
ALTER ROLE $db_user PASSWORD '$verifier';
CREATE TABLE IF NOT EXISTS txnrecovery_probe (id int PRIMARY KEY, at timestamptz);
EOF
  touch "$state_dir/initialized"
}

# Closes every descriptor above 2 (our locks, and whatever pipes the caller leaked to us).
close_extra_fds() {
  local fd n
  for fd in "/proc/$BASHPID/fd/"*; do
    n="${fd##*/}"
    if ((n > 2)); then exec {n}>&-; fi
  done
}

# The node's settings, rewritten at every start (postgresql.conf includes the file), so
# that a state dir made by an older version of this script gets today's.
#   write_postgres_config [PRIMARY_SOCK]   with PRIMARY_SOCK: a standby streaming from it
# $replication: none (one node), sync or async.
write_postgres_config() {
  local primary_sock="${1:-}" commit=off replicated=""
  if [[ "$replication" != none ]]; then
    # A commit is acknowledged once flushed here (async) or on the standby as well (sync):
    # what a failover can lose is then what had not reached the standby (async only).
    commit=on
    replicated="wal_log_hints = on # pg_rewind rejoins a failed primary as a standby
hot_standby = on
wal_keep_size = '256MB'
wal_receiver_timeout = '5s'
wal_retrieve_retry_interval = '500ms'"
    # Not while a new pair's primary is made (sync_standby=off): there is no standby yet,
    # and every commit would wait for one.
    if [[ "$replication" == sync && "${sync_standby:-on}" == on ]]; then
      replicated+="
synchronous_standby_names = '*'"
    fi
    if [[ -n "$primary_sock" ]]; then
      replicated+="
primary_conninfo = 'host=$primary_sock port=$pg_port application_name=$(basename "$node_dir")'"
    fi
  fi
  # Unix socket in the private state dir only (no TCP): trust there (pg_hba.conf) is safe,
  # since only the service user can reach it. Mongo clients authenticate at the gateway
  # (SCRAM). DocumentDB's own loopback connections (background jobs, some updates) and
  # pg_cron's use the same socket.
  as_svc tee "$pgdata/txnrecovery.conf.tmp" >/dev/null <<EOF
# txn-recoveryd test database: written by scripts/testdb-documentdb.sh at every start
listen_addresses = ''
unix_socket_directories = '$sock'
port = $pg_port
shared_preload_libraries = 'pg_cron, pg_documentdb_core, pg_documentdb'
cron.database_name = 'postgres'
cron.host = '$sock'
cron.use_background_workers = on
max_worker_processes = 32
documentdb.enableBackgroundWorker = true
documentdb.enableBackgroundWorkerJobs = true
documentdb.localhost_connection_string = 'host=$sock'
max_connections = 300
synchronous_commit = $commit
ssl = off
log_min_messages = warning
$replicated
EOF
  as_svc mv "$pgdata/txnrecovery.conf.tmp" "$pgdata/txnrecovery.conf"
  if [[ -n "$primary_sock" ]]; then
    as_svc touch "$pgdata/standby.signal"
  else
    as_svc rm -f "$pgdata/standby.signal"
  fi
}

start_postgres() { # [PRIMARY_SOCK]: as for write_postgres_config
  local log="$pg_log" deadline
  postgres_alive && return 0
  if postmaster_running; then
    # Running but not answering: starting, or recovering after a backend crashed (it then
    # restarts every backend by itself). Wait for it rather than start a second one.
    note "waiting for the running PostgreSQL to accept connections (log $log)"
    deadline=$((SECONDS + timeout_s))
    until postgres_alive; do
      ((SECONDS < deadline)) || die "step 'start postgres': running but not answering on $sock within ${timeout_s}s (log $log): $(tail_of "$log")"
      sleep 0.5
    done
    return 0
  fi
  write_postgres_config "${1:-}"
  as_svc mkdir -p -m 0700 "$sock"
  note "starting PostgreSQL (log $log)"
  # Detached like the gateway (below): postgres must inherit none of our descriptors, the
  # state lock above all.
  (
    cd /
    close_extra_fds
    exec setsid -w "${svc_prefix[@]}" "$pg_bin/pg_ctl" -D "$pgdata" -l "$log" -w -t "$timeout_s" -s start
  ) </dev/null >>"$state_dir/pg_ctl.log" 2>&1 ||
    die "step 'start postgres' failed (log $log): $(tail_of "$log")"
  postgres_alive || die "step 'start postgres': started but not answering on $sock (log $log): $(tail_of "$log")"
}

stop_postgres() {
  [[ -f "$pgdata/postmaster.pid" ]] || return 0
  if as_svc "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w -t 60 -s stop >>"$state_dir/pg_ctl.log" 2>&1; then
    echo "$me: stopped postgres ($pgdata)"
  elif [[ -f "$pgdata/postmaster.pid" ]]; then
    die "step 'stop postgres' failed (log $state_dir/pg_ctl.log): $(tail_of "$state_dir/pg_ctl.log")"
  fi
}

# A small CA of the state dir and a server certificate it signed, for 127.0.0.1 and
# localhost, both gateways present (the TLS one alone requires TLS). Made once per state
# dir, in STATE_DIR/tls: ca.pem (what clients trust: tlsCAFile), server.pem, server.key, and
# client.pem (a client certificate and its key, signed by the CA, CN=txnrecovery: what an
# x.509 login would present; the gateway has none, docs/compatibility.md). The CA's key is
# not kept: nothing else is ever signed with it.
make_certificates() {
  local dir="$state_dir/tls" log="$state_dir/openssl.log"
  [[ -s "$dir/ca.pem" && -s "$dir/server.pem" && -s "$dir/server.key" && -s "$dir/client.pem" ]] && return 0
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  (
    umask 077
    cd "$dir.tmp"
    # sign NAME SUBJECT EXTENSIONS...: NAME.pem and NAME.key, signed by the CA
    sign() {
      local name="$1" subject="$2"
      shift 2
      openssl req -new -newkey rsa:2048 -nodes -subj "$subject" -keyout "$name.key" -out "$name.csr" &&
        printf '%s\n' basicConstraints=CA:FALSE "$@" >"$name.ext" &&
        openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
          -extfile "$name.ext" -out "$name.pem" &&
        rm -f "$name.csr" "$name.ext"
    }
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=txn-recoveryd test CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout ca.key -out ca.pem &&
      sign server /CN=localhost "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1" &&
      sign client /CN=txnrecovery "keyUsage=critical,digitalSignature" "extendedKeyUsage=clientAuth" &&
      cat client.key >>client.pem &&
      rm -f ca.key ca.srl client.key
  ) >"$log" 2>&1 || die "step 'tls certificates' failed (log $log): $(tail_of "$log")"
  chmod 0644 "$dir.tmp/ca.pem"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

write_gateway_config() { # NAME PORT ENFORCE_TLS(true|false)
  as_svc tee "$state_dir/$1.json" >/dev/null <<EOF
{
  "NodeHostName": "localhost",
  "BlockedRolePrefixes": ["documentdb", "citus", "pg", "internal_role"],
  "UseLocalHost": true,
  "GatewayListenPort": $2,
  "PostgresSystemUser": "$svc_user",
  "PostgresHostName": "$state_dir/sock",
  "PostgresPort": $pg_port,
  "PostgresDatabase": "postgres",
  "EnforceSslTcp": $3,
  "CertificateOptions": {
    "CertType": "pem_file",
    "FilePath": "$state_dir/tls/server.pem",
    "KeyFilePath": "$state_dir/tls/server.key"
  }
}
EOF
}

# Starts gateway NAME on port WANT (0: a free one), TLS only when ENFORCE_TLS is true; sets
# gw_port.
start_gateway() { # NAME WANT ENFORCE_TLS
  local name="$1" want="$2" tls="$3" gw="$state_dir/documentdb_gateway" p attempt pid log="$state_dir/$1.log" deadline
  for attempt in 1 2 3; do
    p="$want"
    ((p != 0)) || p="$(free_port)"
    port_open "$p" && die "step 'start $name': port $p on 127.0.0.1 is in use"
    write_gateway_config "$name" "$p" "$tls"
    : >"$log"
    chown "$svc_user:" "$log" 2>/dev/null || true
    # Own session, cwd /, no inherited descriptors beyond the standard ones, output to
    # the log: a caller reading our output until EOF (ctest) must not wait for it.
    (
      cd /
      close_extra_fds
      exec setsid "${svc_prefix[@]}" "$gw" "$state_dir/$name.json"
    ) </dev/null >>"$log" 2>&1 &
    pid=$!
    echo "$pid" >"$state_dir/$name.pid"
    deadline=$((SECONDS + timeout_s))
    while ! port_open "$p"; do
      if ! pid_running "$pid"; then
        if grep -q "Address already in use" "$log" && ((want == 0)); then
          continue 2
        fi
        die "step 'start $name': the gateway exited before listening on $p (log $log): $(tail_of "$log")"
      fi
      ((SECONDS < deadline)) || {
        kill -INT "$pid" 2>/dev/null || true
        die "step 'start $name': not listening on $p within ${timeout_s}s (log $log): $(tail_of "$log")"
      }
      sleep 0.2
    done
    gw_port="$p"
    return 0
  done
  die "step 'start $name': could not bind a free port in 3 attempts (log $log)"
}

stop_gateway() { # NAME
  local pid i
  if pid="$(gateway_pid "$1")"; then
    kill -INT "$pid" 2>/dev/null || true # the gateway shuts down cleanly on SIGINT
    for ((i = 0; i < 100; i++)); do pid_running "$pid" || break; sleep 0.1; done
    if pid_running "$pid"; then
      note "$1 pid $pid ignored SIGINT for 10 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "$me: stopped $1 pid $pid"
  fi
  rm -f "$state_dir/$1.pid"
}

# The port of the URI in file $1 (empty when there is none).
uri_port() {
  sed -n 's/.*@127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$1" 2>/dev/null || true
}

# ---- Replication (--replicated) -----------------------------------------------------------
# STATE_DIR/replicated holds the mode (sync or async), STATE_DIR/primary the primary's node
# name (n1 or n2), STATE_DIR/sock links to the primary's socket directory.

other_node() { [[ "$1" == n1 ]] && echo n2 || echo n1; }

# Points STATE_DIR/sock, what the gateways connect through, at node $1's socket, atomically
# (a new link renamed over the old one): their next connection reaches that node.
point_gateway_at() {
  ln -sfn "$1/sock" "$state_dir/sock.new"
  mv -T "$state_dir/sock.new" "$state_dir/sock"
  echo "$1" >"$state_dir/primary"
}

# Makes node $1 a fresh copy of the primary $2 (pg_basebackup over its socket).
clone_node() {
  local node="$1" from="$2" log="$state_dir/basebackup.log"
  use_node "$state_dir/$node"
  rm -rf "$pgdata"
  as_svc mkdir -p "$node_dir"
  note "copying $from into $node (pg_basebackup, log $log)"
  step "pg_basebackup $node" "$log" as_svc "$pg_bin/pg_basebackup" -D "$pgdata" \
    -h "$state_dir/$from/sock" -p "$pg_port" -X stream -c fast
}

# Waits until the primary (the current node) streams to a standby; dies after the timeout.
wait_streaming() {
  local deadline=$((SECONDS + timeout_s)) n
  while :; do
    n="$(as_svc "$pg_bin/psql" -X -qAt -h "$sock" -p "$pg_port" -d postgres \
      -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null || true)"
    [[ "$n" =~ ^[1-9] ]] && return 0
    ((SECONDS < deadline)) || die "step 'replication': no standby streams from $node_dir within ${timeout_s}s (log $(dirname "$node_dir")/*/postgres.log)"
    sleep 0.2
  done
}

# Makes the state dir absolute, usable by the service user and ours: sets svc_user and
# svc_prefix, and takes the state dir's lock (fd 9) for the rest of the caller's life.
enter_state_dir() {
  mkdir -p "$state_dir"
  state_dir="$(cd "$state_dir" && pwd)"
  mkdir -p "$cache/logs"
  ensure_svc_user
  svc_prefix=()
  if ((EUID == 0)); then
    svc_prefix=(setpriv --reuid="$svc_user" --regid="$svc_user" --init-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ LANG=C.UTF-8)
    chown "$svc_user:" "$state_dir"
    # The service user must be able to reach the state dir.
    setpriv --reuid="$svc_user" --regid="$svc_user" --init-groups test -x "$state_dir" ||
      die "step 'state dir': user $svc_user cannot enter $state_dir (a parent directory is not searchable)"
  fi
  chmod 0700 "$state_dir"
  exec 9>"$state_dir/testdb.lock"
  flock 9
}
