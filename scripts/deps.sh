#!/usr/bin/env bash
# Installs the Debian packages needed to build and test txn-recoveryd (compiler and build
# tools, the MongoDB C driver and the other libraries, the JDK and Maven for the embedded
# test database, clang-format and clang-tidy, curl and openssl for the HTTP endpoint's TLS
# tests, and what the packaging tests use: systemd-analyze, man and groff, dpkg-dev).
# Idempotent: packages already installed are not touched, and when nothing is missing it
# neither runs `apt-get update` nor needs the network.
#
# Usage: scripts/deps.sh [--packaging] [--deploy]
#   --packaging  also what building the Debian package takes (scripts/package.sh, CTest
#                debian_package): debhelper and lintian. scripts/test.sh asks for them.
#   --deploy     also what running the project as deployed takes (scripts/run-deployed.sh):
#                debootstrap, systemd-nspawn, podman with runc. scripts/test.sh asks for them.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libmongoc-dev libbson-dev
  libspdlog-dev libcli11-dev libsystemd-dev libtomlplusplus-dev libcpp-httplib-dev
  nlohmann-json3-dev
  libyaml-cpp-dev libssl-dev libcrypt-dev
  libgtest-dev libgmock-dev curl openssl
  clang-format clang-tidy
  spin
  systemd man-db groff-base dpkg-dev
  openjdk-17-jdk-headless maven
)

for arg in "$@"; do
  case "$arg" in
    --packaging) packages+=(debhelper lintian) ;;
    --deploy) packages+=(debootstrap systemd-container podman runc) ;;
    *) echo "usage: scripts/deps.sh [--packaging] [--deploy]" >&2; exit 64 ;;
  esac
done

"$(dirname "${BASH_SOURCE[0]}")/install-debs.sh" "${packages[@]}"
echo "deps: all ${#packages[@]} packages installed"
