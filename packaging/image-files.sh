#!/bin/sh
# image-files.sh INSTALLED IMAGE: lays out under IMAGE the files txn-recoveryd's container
# image adds to its runtime stage (packaging/Containerfile), taken from INSTALLED: a
# `cmake --install` tree (DESTDIR) or an unpacked Debian package, whose man page and
# documents dh_compress has gzipped. One list for both ways of building the image.
set -eu
src="$1"
dst="$2"

# $1 relative to INSTALLED, plain or gzipped; $2 where it goes under IMAGE; $3 its mode.
put() {
  if [ -f "$src/$1" ]; then
    install -D -m "$3" "$src/$1" "$dst/$2"
  elif [ -f "$src/$1.gz" ]; then
    mkdir -p "$(dirname "$dst/$2")"
    gzip -dc "$src/$1.gz" >"$dst/$2"
    chmod "$3" "$dst/$2"
  else
    echo "image-files.sh: $src has no $1" >&2
    exit 1
  fi
}

put usr/sbin/txn-recoveryd usr/sbin/txn-recoveryd 0755
put usr/share/man/man8/txn-recoveryd.8 usr/share/man/man8/txn-recoveryd.8 0644
# The example for reference only: not at the path the daemon reads.
put etc/txn-recoveryd/txn-recoveryd.toml usr/share/doc/txn-recoveryd/txn-recoveryd.toml 0644
# The license (Debian's copyright format) and the runbook the alerts link to by default.
put usr/share/doc/txn-recoveryd/copyright usr/share/doc/txn-recoveryd/copyright 0644
put usr/share/doc/txn-recoveryd/runbook.md usr/share/doc/txn-recoveryd/runbook.md 0644
