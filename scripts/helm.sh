#!/usr/bin/env bash
# Prints the path of helm, the pinned version, building it the first time from its Go
# module through the Go module proxy (the one registry here that serves it), into the
# per-user cache (TXN_RECOVERY_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then
# txn-recoveryd/helm-VERSION/), as scripts/testdb-documentdb.sh keeps DocumentDB's build:
# a new clone, or CI's clean checkout, finds it built. The module's hash is checked against
# the pinned one before the build (go also checks it against sum.golang.org). Exits 1,
# saying why on stderr, when there is no Go toolchain or the proxy cannot be reached.
# Usage: scripts/helm.sh        (the first build takes a few minutes of CPU)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=v3.22.0
module_sum="h1:n1if5iQgHYsujPAcO5oonH/KiSNUmqmUF0iGVjSF3AU="
cache="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}"
bin="$cache/helm-$version"

# A checkout that built it before the cache moved keeps its copy.
if [[ ! -x "$bin/helm" && -x "$root/.cache/helm-$version/helm" ]]; then
  echo "$root/.cache/helm-$version/helm"
  exit 0
fi
if [[ -x "$bin/helm" ]]; then
  echo "$bin/helm"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "helm.sh: no Go toolchain to build helm $version with" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sum="$(cd "$work" && go mod download -json "helm.sh/helm/v3@$version" 2>&1 |
  sed -n 's/^\t"Sum": "\(.*\)",$/\1/p')" || true
if [[ "$sum" != "$module_sum" ]]; then
  echo "helm.sh: helm.sh/helm/v3@$version: module hash '${sum:-none (is proxy.golang.org reachable?)}', pinned $module_sum" >&2
  exit 1
fi
# Built aside and moved into place whole: two runs building at once (ctest runs tests in
# parallel) each leave a complete binary or none, and the later move finds the first's.
# (Aside in the cache's own directory: a rename, not a copy across file systems.)
mkdir -p "$cache"
aside="$(mktemp -d "$cache/.helm-$version.XXXXXX")"
trap 'rm -rf "$work" "$aside"' EXIT
(cd "$work" && GOBIN="$aside" go install -trimpath "helm.sh/helm/v3/cmd/helm@$version") >&2
"$aside/helm" version --short >&2
mv -T "$aside" "$bin" 2>/dev/null || [[ -x "$bin/helm" ]]
echo "$bin/helm"
