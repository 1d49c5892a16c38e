#!/usr/bin/env bash
# Installs the Debian packages needed to build and test txn-recoveryd (compiler and build
# tools, the MongoDB C driver and the other libraries, the JDK and Maven for the embedded
# test database, clang-format and clang-tidy, curl and openssl for the HTTP endpoint's TLS
# tests, and what the packaging tests use:
# systemd-analyze, man and groff, dpkg-shlibdeps). Idempotent: packages already installed are not touched, and when nothing
# is missing it neither runs `apt-get update` nor needs the network.
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

"$(dirname "${BASH_SOURCE[0]}")/install-debs.sh" "${packages[@]}"
echo "deps: all ${#packages[@]} packages installed"
