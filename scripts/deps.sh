#!/usr/bin/env bash
# Installs the Debian packages needed to build and test txn-recoveryd (compiler and build
# tools, the MongoDB C driver and the other libraries, the JDK and Maven for the embedded
# test database, and what the packaging tests use: systemd-analyze, man and groff,
# dpkg-shlibdeps). Idempotent: packages already installed are not touched, and when nothing
# is missing it neither runs `apt-get update` nor needs the network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libmongoc-dev libbson-dev
  libspdlog-dev libcli11-dev libsystemd-dev libtomlplusplus-dev libcpp-httplib-dev
  nlohmann-json3-dev
  libgtest-dev libgmock-dev
  clang-format
  spin
  systemd man-db groff-base dpkg-dev
  openjdk-17-jdk-headless maven
)

missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != installed ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages already installed"
  exit 0
fi

as_root=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "deps: not root and no sudo; install these packages: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps: done"
