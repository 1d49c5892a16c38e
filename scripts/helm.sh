#!/usr/bin/env bash
# Prints the path of helm, the pinned version, building it the first time from its Go
# module through the Go module proxy (the one registry here that serves it), into
# .cache/helm-VERSION/. The module's hash is checked against the pinned one before the
# build (go also checks it against sum.golang.org). Exits 1, saying why on stderr, when
# there is no Go toolchain or the proxy cannot be reached.
# Usage: scripts/helm.sh        (the first build takes a few minutes of CPU)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=v3.22.0
module_sum="h1:n1if5iQgHYsujPAcO5oonH/KiSNUmqmUF0iGVjSF3AU="
bin="$root/.cache/helm-$version"

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
mkdir -p "$bin"
(cd "$work" && GOBIN="$bin" go install -trimpath "helm.sh/helm/v3/cmd/helm@$version") >&2
"$bin/helm" version --short >&2
echo "$bin/helm"
