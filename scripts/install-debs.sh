#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are not installed yet, the
# way scripts/deps.sh does: idempotent (packages already installed are not touched, and
# when nothing is missing it neither runs `apt-get update` nor needs the network), with
# sudo when not root. scripts/deps.sh calls it, and so do the checks that need a tool on
# first use (promtool).
# Usage: scripts/install-debs.sh PACKAGE...
set -euo pipefail
missing=()
for pkg in "$@"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == installed ]] || missing+=("$pkg")
done
((${#missing[@]})) || exit 0

as_root=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install-debs: not root and no sudo; install these packages: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-debs: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists on hand first; refreshed only when they do not have the packages.
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" ||
  { "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; }
