#!/usr/bin/env bash
# Builds the Debian package txn-recoveryd_VERSION_ARCH.deb from this tree.
#
#   scripts/package.sh [--build-dir DIR] [--no-build] [--output DIR] [--check] [--lintian]
#
# By default it configures build-release/ (Release, Debian's hardening flags from
# dpkg-buildflags, no tests) and builds the binary and the man page in it. With
# --build-dir DIR --no-build it packages what DIR already holds (CTest does so with its
# own build, to stay fast). Then: `cmake --install --prefix /usr --strip` into a staging
# directory, Depends from dpkg-shlibdeps, DEBIAN/ from packaging/deb/, and
# `dpkg-deb --root-owner-group --build`. The .deb goes to --output (default: dist/).
#   --check    checks the built package: its control fields, conffiles and maintainer
#              scripts, its exact file list with owners and modes, the packaged binary's
#              --version, and that packaging/Containerfile installs the same run-time
#              libraries as the package depends on.
#   --lintian  runs lintian on it (installing lintian first if needed); fails on any
#              error or warning not explained in docs/packaging.md ("Lintian notes").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build-release"
output="$root/dist"
do_build=1
do_check=0
do_lintian=0
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$(realpath -m "$2")"; shift 2 ;;
    --output) output="$(realpath -m "$2")"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --check) do_check=1; shift ;;
    --lintian) do_lintian=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 64 ;;
  esac
done

fail() { echo "package: FAIL: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture cmake; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (scripts/deps.sh installs it)"
done

if ((do_build)); then
  # Debian's flags: -O2 -g, stack protector, _FORTIFY_SOURCE, format checks, relro and
  # bindnow, PIE. CMake does not read CPPFLAGS, hence the merge; Release adds only NDEBUG
  # (its -O3 trips a false -Wrestrict of GCC 12 in std::string's operator+). Warnings are
  # not errors here: a package build must not break on a compiler's new warning, and CI
  # (scripts/test.sh) keeps -Werror.
  eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/usr -DTXN_RECOVERY_BUILD_TESTS=OFF -DTXN_RECOVERY_WERROR=OFF \
    -DCMAKE_CXX_FLAGS="$CPPFLAGS $CXXFLAGS" -DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG \
    -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS" >/dev/null
  cmake --build "$build_dir" -j"$(nproc)" --target txn-recoveryd txn-recoveryd-docs
fi
[[ -f "$build_dir/cmake_install.cmake" ]] || fail "$build_dir is not a configured build tree"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
DESTDIR="$stage" cmake --install "$build_dir" --prefix /usr --strip >/dev/null
# Independent of the umask of whoever runs this.
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -type f ! -path '*/sbin/*' -exec chmod 0644 {} +

binary="$stage/usr/sbin/txn-recoveryd"
[[ -x "$binary" ]] || fail "cmake --install put no usr/sbin/txn-recoveryd into the staging tree"
# As dh_strip does: --strip leaves the compiler's notes in .comment and .note.
strip --remove-section=.comment --remove-section=.note "$binary"
# "txn-recoveryd 0.1.0 (revision v0.1.0-3-gabc1234)": the package version is the middle word.
version_line="$("$binary" --version)"
[[ "$version_line" =~ ^txn-recoveryd\ ([0-9]+\.[0-9]+\.[0-9]+)\ \(revision\ [^\)]+\)$ ]] ||
  fail "unexpected --version output: $version_line"
version="${BASH_REMATCH[1]}"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"

# dpkg-shlibdeps wants a debian/control to read the package names from.
mkdir -p "$work/src/debian"
printf 'Source: txn-recoveryd\n\nPackage: txn-recoveryd\nArchitecture: any\n' \
  >"$work/src/debian/control"
shlibs="$(cd "$work/src" && dpkg-shlibdeps -O -e"$binary" 2>"$work/shlibdeps.err")" ||
  fail "dpkg-shlibdeps: $(cat "$work/shlibdeps.err")"
depends="${shlibs#shlibs:Depends=}"
[[ -n "$depends" && "$depends" != "$shlibs" ]] || fail "dpkg-shlibdeps printed: $shlibs"
# postinst creates the user with adduser where systemd-sysusers is missing.
depends="$depends, adduser"

# The maintainer identity is spelled once, in packaging/maintainer (the Helm chart, the
# container image, the Debian changelog and copyright repeat it; scripts/check-release-metadata.py
# fails when they part).
maintainer="$(head -n1 "$root/packaging/maintainer")"
[[ "$maintainer" =~ ^[^\<\>]+\ \<[^\<\>@\ ]+@[^\<\>\ ]+\>$ ]] ||
  fail "packaging/maintainer is not 'Name <address>': $maintainer"

mkdir -p "$stage/DEBIAN"
size_kib="$(du -s -k --apparent-size --exclude=DEBIAN "$stage" | cut -f1)"
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@INSTALLED_SIZE@|$size_kib|" \
  -e "s|@DEPENDS@|$depends|" -e "s|@MAINTAINER@|$maintainer|" "$root/packaging/deb/control.in" >"$stage/DEBIAN/control"
install -m 0644 "$root/packaging/deb/conffiles" "$stage/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  install -m 0755 "$root/packaging/deb/$script" "$stage/DEBIAN/$script"
done
# Every file but the conffiles, as dpkg itself would record them.
(cd "$stage" && find usr -type f -printf '%P\n' | LC_ALL=C sort | sed 's|^|usr/|' |
  xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

mkdir -p "$output"
# File and archive times from the last commit: the same tree gives the same package.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH
deb="$output/txn-recoveryd_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "package: $deb"
echo "package: Depends: $depends"

if ((do_check)); then
  info="$(dpkg-deb -I "$deb")"
  field() { dpkg-deb -f "$deb" "$1"; }
  [[ "$(field Package)" == txn-recoveryd ]] || fail "Package: $(field Package)"
  [[ "$(field Version)" == "$version" ]] || fail "Version: $(field Version)"
  [[ "$(field Architecture)" == "$arch" ]] || fail "Architecture: $(field Architecture)"
  [[ "$(field Maintainer)" == "$maintainer" ]] || fail "Maintainer: $(field Maintainer)"
  dep_names=" $(field Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' | tr '\n' ' ')"
  for dep in libc6 libstdc++6 libmongoc-1.0-0 libbson-1.0-0 libsystemd0 \
    adduser; do
    [[ "$dep_names" == *" $dep "* ]] || fail "Depends lacks $dep: $(field Depends)"
  done
  for member in control conffiles md5sums postinst prerm postrm; do
    grep -Eq "^ +[0-9]+ bytes, +[0-9]+ lines +\*? *$member" <<<"$info" ||
      fail "no DEBIAN/$member in the package:"$'\n'"$info"
  done
  [[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" == \
    /etc/txn-recoveryd/txn-recoveryd.toml ]] || fail "conffiles is not the configuration file"

  # The exact payload: path, mode and owner of every file.
  expected="-rw-r--r-- root/root ./etc/txn-recoveryd/txn-recoveryd.toml
-rw-r--r-- root/root ./usr/lib/systemd/system/txn-recoveryd-sweep.service
-rw-r--r-- root/root ./usr/lib/systemd/system/txn-recoveryd-sweep.timer
-rw-r--r-- root/root ./usr/lib/systemd/system/txn-recoveryd.service
-rw-r--r-- root/root ./usr/lib/sysusers.d/txn-recoveryd.conf
-rwxr-xr-x root/root ./usr/sbin/txn-recoveryd
-rw-r--r-- root/root ./usr/share/bash-completion/completions/txn-recoveryd
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/changelog.gz
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/copyright
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/runbook.md
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/txn-recoveryd.toml
-rw-r--r-- root/root ./usr/share/man/man8/txn-recoveryd.8.gz
-rw-r--r-- root/root ./usr/share/zsh/vendor-completions/_txn-recoveryd"
  actual="$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $1, $2, $6}' | LC_ALL=C sort -k3)"
  [[ "$actual" == "$expected" ]] ||
    fail "unexpected payload:"$'\n'"$(diff <(echo "$expected") <(echo "$actual") || true)"
  dirs="$(dpkg-deb -c "$deb" | awk '$1 ~ /^d/ && ($1 != "drwxr-xr-x" || $2 != "root/root")')"
  [[ -z "$dirs" ]] || fail "directories not 0755 root:root:"$'\n'"$dirs"

  dpkg-deb -x "$deb" "$work/x"
  [[ "$("$work/x/usr/sbin/txn-recoveryd" --version)" == "$version_line" ]] ||
    fail "the packaged binary does not report $version"
  zcat "$work/x/usr/share/man/man8/txn-recoveryd.8.gz" | cmp -s - "$root/packaging/txn-recoveryd.8" ||
    fail "the packaged man page differs from packaging/txn-recoveryd.8"
  cmp -s "$work/x/etc/txn-recoveryd/txn-recoveryd.toml" "$root/config/txn-recoveryd.toml" ||
    fail "the packaged configuration differs from config/txn-recoveryd.toml"
  for script in postinst prerm postrm; do
    sh -n "$stage/DEBIAN/$script" || fail "DEBIAN/$script: syntax error"
  done

  # The container's run-time stage installs exactly the libraries the package depends on
  # (less the sanitizers' run-time, present when this build is an ASan build, and adduser).
  want="$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ .*//' |
    grep -Ev '^(adduser|libasan[0-9]*|libubsan[0-9]*)$' | LC_ALL=C sort -u)"
  have="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$root/packaging/Containerfile" |
    tr ' ' '\n' | grep -v '^$' | LC_ALL=C sort -u)"
  [[ "$want" == "$have" ]] || fail "packaging/Containerfile's run-time packages differ from Depends:"$'\n'"$(diff <(echo "$want") <(echo "$have") || true)"
  echo "package: check passed ($(dpkg-deb -c "$deb" | grep -vc '^d') files)"
fi

if ((do_lintian)); then
  if ! command -v lintian >/dev/null 2>&1; then
    echo "package: installing lintian"
    as_root=()
    ((EUID == 0)) || as_root=(sudo)
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends lintian >/dev/null ||
      { "${as_root[@]}" apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends lintian >/dev/null; }
  fi
  # Every tag docs/packaging.md explains under "Lintian notes"; any other error or warning fails.
  explained="$(sed -n '/^### Lintian notes/,/^## /p' "$root/docs/packaging.md" |
    grep -E '^- `' | grep -Eo '`[a-z0-9-]+`' | tr -d '`' | LC_ALL=C sort -u)"
  report="$(lintian --info --display-info --pedantic --tag-display-limit 0 "$deb" 2>&1 || true)"
  echo "$report" | grep -Ev '^N: *$' || true
  unexplained="$(grep -E '^[EW]: ' <<<"$report" | awk '{print $3}' | LC_ALL=C sort -u |
    comm -23 - <(echo "$explained") || true)"
  [[ -z "$unexplained" ]] || fail "lintian errors or warnings not explained in docs/packaging.md: $unexplained"
  echo "package: lintian: no unexplained errors or warnings"
fi
