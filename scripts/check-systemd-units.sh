#!/usr/bin/env bash
# Checks the systemd units in systemd/: `systemd-analyze verify` on each, the sysusers.d
# file through `systemd-sysusers --dry-run`, and each service's
# `systemd-analyze security --offline=yes` report, printed in full. Fails if a service's
# exposure rises above its pinned level below: a new unit setting that loosens the
# sandbox must come with a new pin, and a reason, in the same commit.
#
# Usage: scripts/check-systemd-units.sh [--binary PATH]
#   --binary PATH  the txn-recoveryd executable to verify ExecStart= against, for a tree
#                  where it is not installed in /usr/sbin (CTest passes the built one).
#
# Needs systemd-analyze from systemd >= 250 (Debian bookworm has 252); scripts/deps.sh
# installs it. Missing or too old, this fails: it never skips.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Overall exposure ×10 (systemd-analyze's --threshold scale), measured with systemd 252:
# 1.1 for both. What is left: the network (PrivateNetwork=, AF_INET/AF_INET6: the daemon
# talks to MongoDB), AF_UNIX (journal, notify socket), no IPAddressDeny= (the database
# may be anywhere; see the unit), the host's root directory, and the read access to
# /dev/rtc that ProtectClock= itself grants.
declare -A pinned=(
  [txn-recoveryd.service]=11
  [txn-recoveryd-sweep.service]=11
)

binary=/usr/sbin/txn-recoveryd
while (($#)); do
  case "$1" in
    --binary) binary="$(realpath -m "$2")"; shift 2 ;;
    *) echo "usage: $0 [--binary PATH]" >&2; exit 64 ;;
  esac
done

fail() { echo "check-systemd-units: FAIL: $*" >&2; exit 1; }

command -v systemd-analyze >/dev/null 2>&1 ||
  fail "systemd-analyze not found: install the Debian package 'systemd' (scripts/deps.sh does)"
version="$(systemd-analyze --version | head -n1)"
systemd-analyze security --help 2>&1 | grep -q -- '--offline' ||
  fail "$version: 'systemd-analyze security' has no --offline (systemd >= 250 needed)"
[[ -x "$binary" ]] || fail "$binary is not an executable (build it, or pass --binary)"
echo "== $version"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/units" "$work/man/man8"
# The units as shipped, except that ExecStart= points at the binary under test, so that
# verify's "is it executable" check means something without installing the package.
for f in "$root"/systemd/*.service "$root"/systemd/*.timer; do
  sed "s|/usr/sbin/txn-recoveryd|$binary|g" "$f" >"$work/units/$(basename "$f")"
done
# verify also runs man(1) on each Documentation=man:... entry.
cp "$root/packaging/txn-recoveryd.8" "$work/man/man8/"

cd "$work/units"
units=(*.service *.timer)
echo "== systemd-analyze verify ${units[*]}"
out="$(MANPATH="$work/man:" systemd-analyze verify "${units[@]/#/./}" 2>&1)" ||
  fail "systemd-analyze verify:"$'\n'"$out"
# verify returns 0 for some warnings it prints; any output is a finding.
[[ -z "$out" ]] || fail "systemd-analyze verify printed:"$'\n'"$out"
echo "ok"

echo "== systemd-sysusers --dry-run txn-recoveryd.sysusers"
mkdir -p "$work/sysroot/etc"
systemd-sysusers --dry-run --root="$work/sysroot" "$root/systemd/txn-recoveryd.sysusers" ||
  fail "systemd-sysusers rejects systemd/txn-recoveryd.sysusers"

status=0
for unit in *.service; do
  limit="${pinned[$unit]:-}"
  [[ -n "$limit" ]] || fail "$unit has no pinned exposure in $0"
  echo "== systemd-analyze security --offline=yes $unit"
  report="$(systemd-analyze security --offline=yes --no-pager "./$unit" 2>&1)" || true
  echo "$report"
  level="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")"
  [[ -n "$level" ]] || fail "no exposure level in the report for $unit"
  if ! systemd-analyze security --offline=yes --threshold="$limit" "./$unit" >/dev/null 2>&1; then
    echo "check-systemd-units: FAIL: $unit exposure $level is above the pinned $((limit / 10)).$((limit % 10))" >&2
    status=1
  else
    echo "$unit: exposure $level (pinned at most $((limit / 10)).$((limit % 10)))"
  fi
done
exit "$status"
