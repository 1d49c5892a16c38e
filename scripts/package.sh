#!/usr/bin/env bash
# Builds the Debian source and binary packages from this tree with dpkg-buildpackage
# (debian/): txn-recoveryd_VERSION.dsc and .tar.xz, txn-recoveryd_VERSION_ARCH.deb and its
# automatic txn-recoveryd-dbgsym_VERSION_ARCH.deb, with their .buildinfo and .changes.
#
#   scripts/package.sh [--output DIR] [--work-dir DIR] [--check] [--lintian]
#
# The tree's files (what git tracks or would track: no build trees, caches or packages) are
# copied to WORK/txn-recoveryd (default build-deb/), so that the build writes nothing into
# the checkout, and `dpkg-buildpackage -us -uc` runs there: debian/rules configures, builds
# and installs with CMake, debhelper makes the packages. They go to --output (default dist/).
# --version reports `git describe` of this tree (TXN_RECOVERYD_REVISION, which debian/rules
# hands to CMake). DEB_BUILD_OPTIONS is the caller's, with parallel=<number of CPUs> unless
# it says parallel=N itself. With ccache installed, the compiler runs through it
# (/usr/lib/ccache first in PATH; debian/rules knows nothing of it), so that a second
# build costs only the files that changed.
#   --check    checks the built packages: the control fields, conffiles and maintainer
#              scripts (nothing enabled or started on installation), the exact file list with
#              owners and modes, the packaged binary's --version and hardening, the -dbgsym
#              package's debug file, and that packaging/Containerfile installs the same
#              run-time libraries as the package's shared-library dependencies.
#   --lintian  lintian --pedantic --display-info (informational tags too) on the source and
#              binary packages: fails on any tag not overridden (debian/*lintian-overrides,
#              each with its reason).
# Needs debhelper, and lintian for --lintian: `scripts/deps.sh --packaging` installs them;
# dpkg-buildpackage names any missing build dependency (`apt-get build-dep ./` installs them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
output="$root/dist"
work="$root/build-deb"
do_check=0
do_lintian=0
while (($#)); do
  case "$1" in
    --output) output="$(realpath -m "$2")"; shift 2 ;;
    --work-dir) work="$(realpath -m "$2")"; shift 2 ;;
    --check) do_check=1; shift ;;
    --lintian) do_lintian=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 64 ;;
  esac
done

fail() { echo "package: FAIL: $*" >&2; exit 1; }
needs=(dpkg-buildpackage dpkg-architecture dh)
((do_lintian == 0)) || needs+=(lintian)
for tool in "${needs[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (scripts/deps.sh --packaging installs it)"
done

# The source: the files git knows or would add (tracked, and untracked but not ignored),
# as they are in the working tree; without git, all but what .dockerignore leaves out too.
src="$work/txn-recoveryd"
# Only what this script puts there: --work-dir may name a directory that holds more.
rm -rf "$src" "$work/extracted"
rm -f "$work"/txn-recoveryd{,-dbgsym}_*
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do if [[ -e "$f" || -L "$f" ]]; then printf '%s\0' "$f"; fi; done |
    tar --null -T - -cf -) | tar -C "$src" -xf -
  TXN_RECOVERYD_REVISION="$(git -C "$root" describe --always --dirty --tags)"
else
  tar -C "$root" --exclude=./.git --exclude=./build --exclude='./build-*' --exclude=./dist \
    --exclude=./.cache --exclude=./testdb/target -cf - . | tar -C "$src" -xf -
  TXN_RECOVERYD_REVISION=""
fi
export TXN_RECOVERYD_REVISION

build_options="${DEB_BUILD_OPTIONS:-}"
[[ " $build_options " == *" parallel="* ]] || build_options="${build_options:+$build_options }parallel=$(nproc)"
if command -v ccache >/dev/null 2>&1 && [[ -d /usr/lib/ccache ]]; then
  # The caller's cache, named: debhelper (compat 13) gives the build a HOME of its own, in
  # which ccache would start an empty cache every time. Paths under the copy are hashed
  # relative to it, as scripts/build.sh does for the checkout.
  CCACHE_DIR="$(ccache -k cache_dir)"
  export PATH="/usr/lib/ccache:$PATH" CCACHE_DIR CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
log="$work/dpkg-buildpackage.log"
echo "package: dpkg-buildpackage -us -uc in $src (DEB_BUILD_OPTIONS=\"$build_options\")"
if ! (cd "$src" && DEB_BUILD_OPTIONS="$build_options" dpkg-buildpackage -us -uc >"$log" 2>&1); then
  tail -n 40 "$log" >&2
  fail "dpkg-buildpackage failed (the whole log: $log)"
fi

version="$(cd "$src" && dpkg-parsechangelog -S Version)"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"
mkdir -p "$output"
for f in "txn-recoveryd_$version.dsc" "txn-recoveryd_$version.tar.xz" \
  "txn-recoveryd_${version}_$arch.deb" "txn-recoveryd-dbgsym_${version}_$arch.deb" \
  "txn-recoveryd_${version}_$arch.buildinfo" "txn-recoveryd_${version}_$arch.changes"; do
  [[ -f "$work/$f" ]] || fail "dpkg-buildpackage made no $f"
  mv -f "$work/$f" "$output/"
done
deb="$output/txn-recoveryd_${version}_$arch.deb"
dbgsym="$output/txn-recoveryd-dbgsym_${version}_$arch.deb"
changes="$output/txn-recoveryd_${version}_$arch.changes"
echo "package: $deb"
echo "package: Depends: $(dpkg-deb -f "$deb" Depends)"

if ((do_check)); then
  x="$work/extracted"
  dpkg-deb -x "$deb" "$x"
  dpkg-deb -e "$deb" "$x/DEBIAN"
  field() { dpkg-deb -f "$deb" "$1"; }
  # The version is spelled in CMakeLists.txt, which --version reports; debian/changelog
  # repeats it (scripts/check-release-metadata.py fails when they part).
  version_line="$("$x/usr/sbin/txn-recoveryd" --version)"
  [[ "$version_line" == "txn-recoveryd $version (revision ${TXN_RECOVERYD_REVISION:-unknown})" ]] ||
    fail "the packaged binary says '$version_line'; the package is $version, the tree ${TXN_RECOVERYD_REVISION:-unknown}"
  maintainer="$(head -n1 "$root/packaging/maintainer")"
  [[ "$(field Package)" == txn-recoveryd ]] || fail "Package: $(field Package)"
  [[ "$(field Architecture)" == "$arch" ]] || fail "Architecture: $(field Architecture)"
  [[ "$(field Maintainer)" == "$maintainer" ]] || fail "Maintainer: $(field Maintainer)"
  depends="$(field Depends)"
  dep_names=" $(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ (.*//' | tr '\n' ' ')"
  for dep in libc6 libstdc++6 libmongoc-1.0-0 libbson-1.0-0 libsystemd0 \
    "systemd | systemd-standalone-sysusers | systemd-sysusers"; do
    [[ "$dep_names" == *" $dep "* ]] || fail "Depends lacks $dep: $depends"
  done
  [[ "$(ls "$x/DEBIAN" | tr '\n' ' ')" == "conffiles control md5sums postinst postrm prerm " ]] ||
    fail "control members: $(ls "$x/DEBIAN" | tr '\n' ' ')"
  [[ "$(cat "$x/DEBIAN/conffiles")" == /etc/txn-recoveryd/txn-recoveryd.toml ]] ||
    fail "conffiles is not the configuration file: $(cat "$x/DEBIAN/conffiles")"
  # Installing creates the user and starts nothing (debian/rules says why); an upgrade
  # restarts what runs; removing stops the units; purging forgets their links.
  grep -q '^ *systemd-sysusers .*txn-recoveryd\.conf$' "$x/DEBIAN/postinst" ||
    fail "postinst does not create the user with systemd-sysusers"
  grep -q 'systemd-tmpfiles .*--create txn-recoveryd\.conf' "$x/DEBIAN/postinst" ||
    fail "postinst does not apply the tmpfiles.d entry (the sweep's textfile directory)"
  # Its ACL names the user: created first.
  (($(grep -n '^[[:space:]]*systemd-sysusers' "$x/DEBIAN/postinst" | head -n1 | cut -d: -f1) <
    $(grep -n '^[[:space:]]*systemd-tmpfiles' "$x/DEBIAN/postinst" | head -n1 | cut -d: -f1))) ||
    fail "postinst applies the tmpfiles.d entry before systemd-sysusers creates its user"
  grep -q 'deb-systemd-invoke try-restart ' "$x/DEBIAN/postinst" ||
    fail "postinst does not restart running units on upgrade"
  ! grep -Eq 'deb-systemd-invoke (start|restart) |_dh_action' "$x/DEBIAN/postinst" ||
    fail "postinst starts a unit"
  grep -q 'deb-systemd-invoke stop txn-recoveryd.service txn-recoveryd-sweep.timer' "$x/DEBIAN/prerm" ||
    fail "prerm does not stop the units on removal"
  grep -q "deb-systemd-helper purge 'txn-recoveryd-sweep.timer' 'txn-recoveryd.service'" "$x/DEBIAN/postrm" ||
    fail "postrm does not forget the units' links on purge"
  # The configuration may hold a password: 0640 root:txn-recoveryd once installed, as a
  # statoverride registered on the first installation when none exists (debian/postinst
  # says why), after debhelper's part has created the group; purge forgets it if unchanged.
  grep -q '^	dpkg-statoverride --update --add root txn-recoveryd 0640 "$config"$' "$x/DEBIAN/postinst" ||
    fail "postinst does not make the configuration 0640 root:txn-recoveryd"
  grep -q '\[ "$1" = configure \] && \[ -z "$2" \] && ! dpkg-statoverride --list' "$x/DEBIAN/postinst" ||
    fail "postinst sets the configuration's mode on upgrades too, or over an administrator's override"
  (($(grep -n '^[[:space:]]*systemd-sysusers' "$x/DEBIAN/postinst" | head -n1 | cut -d: -f1) <
    $(grep -n '^[[:space:]]*dpkg-statoverride --update' "$x/DEBIAN/postinst" | head -n1 | cut -d: -f1))) ||
    fail "postinst sets the group txn-recoveryd before systemd-sysusers creates it"
  grep -q 'dpkg-statoverride --remove "$config"' "$x/DEBIAN/postrm" ||
    fail "postrm does not forget the configuration's override on purge"
  # What postinst decides, run with every command it calls stubbed to log its arguments:
  # the override on a first installation; none on an upgrade, nor over an existing one.
  stubs="$work/postinst-stubs"
  rm -rf "$stubs" && mkdir -p "$stubs"
  for cmd in systemd-sysusers systemd-tmpfiles deb-systemd-helper deb-systemd-invoke systemctl dpkg-statoverride; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n[ "%s $1" != "dpkg-statoverride --list" ] || [ -n "$EXISTING" ]\n' \
      "$cmd" "$stubs" "$cmd" >"$stubs/$cmd"
    chmod +x "$stubs/$cmd"
  done
  postinst_calls() {
    rm -f "$stubs/calls"
    env PATH="$stubs:$PATH" DPKG_ROOT=/nonexistent EXISTING="$1" sh "$x/DEBIAN/postinst" configure "$2" ||
      fail "postinst configure '$2' failed"
    grep -c '^dpkg-statoverride --update --add root txn-recoveryd 0640 /etc/txn-recoveryd/txn-recoveryd.toml$' \
      "$stubs/calls" || true
  }
  [[ "$(postinst_calls "" "")" == 1 ]] || fail "a first installation does not make the configuration 0640 root:txn-recoveryd"
  [[ "$(postinst_calls "" 0.1.0)" == 0 ]] || fail "an upgrade sets the configuration's mode again"
  [[ "$(postinst_calls yes "")" == 0 ]] || fail "postinst replaces an administrator's override"
  for script in postinst prerm postrm; do
    sh -n "$x/DEBIAN/$script" || fail "DEBIAN/$script: syntax error"
  done

  # The exact payload: path, mode and owner of every file. The units are in /lib (bookworm's
  # place for them, and debhelper's; the same directory as /usr/lib's on merged-/usr).
  # The configuration is 0644 root/root in the payload, as a package can only carry it: the
  # group txn-recoveryd exists only once installed, and postinst's override makes it 0640.
  expected="-rw-r--r-- root/root ./etc/txn-recoveryd/txn-recoveryd.toml
-rw-r--r-- root/root ./lib/systemd/system/txn-recoveryd-sweep.service
-rw-r--r-- root/root ./lib/systemd/system/txn-recoveryd-sweep.timer
-rw-r--r-- root/root ./lib/systemd/system/txn-recoveryd.service
-rw-r--r-- root/root ./usr/lib/sysusers.d/txn-recoveryd.conf
-rw-r--r-- root/root ./usr/lib/tmpfiles.d/txn-recoveryd.conf
-rwxr-xr-x root/root ./usr/sbin/txn-recoveryd
-rw-r--r-- root/root ./usr/share/bash-completion/completions/txn-recoveryd
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/changelog.gz
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/copyright
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/runbook.md
-rw-r--r-- root/root ./usr/share/doc/txn-recoveryd/txn-recoveryd.toml
-rw-r--r-- root/root ./usr/share/lintian/overrides/txn-recoveryd
-rw-r--r-- root/root ./usr/share/man/man8/txn-recoveryd.8.gz
-rw-r--r-- root/root ./usr/share/zsh/vendor-completions/_txn-recoveryd"
  actual="$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $1, $2, $6}' | LC_ALL=C sort -k3)"
  [[ "$actual" == "$expected" ]] ||
    fail "unexpected payload:"$'\n'"$(diff <(echo "$expected") <(echo "$actual") || true)"
  dirs="$(dpkg-deb -c "$deb" | awk '$1 ~ /^d/ && ($1 != "drwxr-xr-x" || $2 != "root/root")')"
  [[ -z "$dirs" ]] || fail "directories not 0755 root:root:"$'\n'"$dirs"

  same() { cmp -s "$1" "$root/$2" || fail "the packaged ${1#"$x"} differs from $2"; }
  same "$x/etc/txn-recoveryd/txn-recoveryd.toml" config/txn-recoveryd.toml
  same "$x/usr/share/doc/txn-recoveryd/txn-recoveryd.toml" config/txn-recoveryd.toml
  same "$x/usr/share/doc/txn-recoveryd/runbook.md" docs/runbook.md
  same "$x/usr/share/doc/txn-recoveryd/copyright" debian/copyright
  same "$x/lib/systemd/system/txn-recoveryd.service" systemd/txn-recoveryd.service
  zcat "$x/usr/share/man/man8/txn-recoveryd.8.gz" | cmp -s - "$root/packaging/txn-recoveryd.8" ||
    fail "the packaged man page differs from packaging/txn-recoveryd.8"
  zcat "$x/usr/share/doc/txn-recoveryd/changelog.gz" | cmp -s - "$root/debian/changelog" ||
    fail "the packaged changelog differs from debian/changelog"

  # Debian's hardening as debian/rules asks for it (lintian --info says more), and the debug
  # information in the -dbgsym package under the binary's build id.
  binary="$x/usr/sbin/txn-recoveryd"
  [[ "$(readelf -h "$binary")" =~ Type:\ *DYN ]] || fail "the binary is not position-independent"
  [[ "$(readelf -d "$binary")" == *BIND_NOW* ]] || fail "the binary is not linked with -z now"
  build_id="$(readelf -n "$binary" | sed -n 's/^ *Build ID: *//p')"
  [[ -n "$build_id" ]] || fail "the binary has no build id"
  [[ "$(dpkg-deb -f "$dbgsym" Package)" == txn-recoveryd-dbgsym ]] || fail "no txn-recoveryd-dbgsym package"
  debug_files="$(dpkg-deb -c "$dbgsym")"
  grep -q "/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug$" <<<"$debug_files" ||
    fail "the -dbgsym package has no debug file for build id $build_id"

  # The container's run-time stage installs exactly the libraries the binary links, as
  # dpkg-shlibdeps found them (the package's other Depends are about the user and units).
  shlibs="$(sed -n 's/^shlibs:Depends=//p' "$src/debian/txn-recoveryd.substvars")"
  want="$(tr ',' '\n' <<<"$shlibs" | sed 's/^ *//; s/ .*//' | grep -v '^$' | LC_ALL=C sort -u)"
  have="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$root/packaging/Containerfile" |
    tr ' ' '\n' | grep -v '^$' | LC_ALL=C sort -u)"
  [[ -n "$want" && "$want" == "$have" ]] ||
    fail "packaging/Containerfile's run-time packages differ from shlibs:Depends:"$'\n'"$(diff <(echo "$want") <(echo "$have") || true)"
  echo "package: check passed ($(dpkg-deb -c "$deb" | grep -vc '^d') files; $version_line)"
fi

if ((do_lintian)); then
  # Every tag from info up fails, unless debian/ overrides it (with the reason beside it).
  # --info explains each tag shown; --display-info is what shows the informational ones.
  status=0
  report="$(lintian --pedantic --info --display-info --tag-display-limit 0 \
    --fail-on error,warning,info,pedantic "$changes" 2>&1)" || status=$?
  grep -v '^running with root privileges' <<<"$report" || true
  ((status == 0)) || fail "lintian: tags above (exit $status)"
  echo "package: lintian --pedantic --display-info: no tag but those overridden in debian/"
fi
