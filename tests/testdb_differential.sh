#!/usr/bin/env bash
# CTest: the embedded test server's narrowed backend against mongo-java-server's stock one
# (testdb/README.md, "Narrowed scans"). Compiles the launcher sources and
# testdb/src/test/java into OUT_DIR/classes and runs txnrecovery.testdb.DifferentialTest,
# which exits non-zero on any difference.
#
#   tests/testdb_differential.sh OUT_DIR [--ops N] [--seed S]
#
# Needs the runtime jars that scripts/testdb-start.sh --build-only puts in .cache/testdb/lib.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${1:?usage: testdb_differential.sh OUT_DIR [--ops N] [--seed S]}"
shift
lib="$root/.cache/testdb/lib"

"$root/scripts/testdb-start.sh" --build-only ||
  { echo "testdb_differential: building the test server's dependencies failed" >&2; exit 1; }

mapfile -t sources < <(find "$root/testdb/src/main/java" "$root/testdb/src/test/java" -name '*.java' | LC_ALL=C sort)
((${#sources[@]} > 0)) || { echo "testdb_differential: no sources under $root/testdb/src" >&2; exit 1; }
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac -Xlint:all -Werror --release 17 -encoding UTF-8 -d "$out/classes" -cp "$lib/*" "${sources[@]}" ||
  { echo "testdb_differential: javac failed" >&2; exit 1; }

exec java -cp "$out/classes:$lib/*" txnrecovery.testdb.DifferentialTest "$@"
