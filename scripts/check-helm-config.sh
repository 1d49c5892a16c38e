#!/usr/bin/env bash
# The Helm chart's configuration as the daemon reads it (CTest `helm_chart_config`): renders
# deploy/helm/txn-recoveryd with a values file that sets numbers (ci/numbers-values.yaml;
# a values file hands every number to the templates as a float), checks that each whole
# number is written as an integer (`workers = 8`, not `8.0`), and runs the rendered TOML
# through `txn-recoveryd check-config`. helm comes from scripts/helm.sh (built from its Go
# module the first time: minutes); without it the check fails, saying why.
# Without the daemon's binary (no --binary, or not executable) it does everything but
# check-config, then says SKIPPED and exits 77, which CTest counts as skipped.
# Usage: scripts/check-helm-config.sh [--binary PATH/TO/txn-recoveryd]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary=""
while (($#)); do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    *) echo "usage: $0 [--binary PATH]" >&2; exit 64 ;;
  esac
done
chart="$root/deploy/helm/txn-recoveryd"
values="$chart/ci/numbers-values.yaml"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check-helm-config: FAIL: $*" >&2; exit 1; }

helm="$("$root/scripts/helm.sh" 2>"$work/helm.log")" ||
  fail "no helm: $(tail -3 "$work/helm.log")"
"$helm" lint --strict "$chart" -f "$values" >"$work/lint.log" 2>&1 ||
  fail "helm lint with $values:"$'\n'"$(cat "$work/lint.log")"
"$helm" template recovery "$chart" --namespace bank -f "$values" \
  --show-only templates/configmap.yaml >"$work/configmap.yaml" ||
  fail "helm template with $values"
# The file under `txn-recoveryd.toml: |`, its 4 spaces of indentation removed.
awk '/^  txn-recoveryd.toml: \|$/ {on = 1; next} on && /^    / {print substr($0, 5); next}
     on && /^$/ {print; next} on {exit}' "$work/configmap.yaml" >"$work/txn-recoveryd.toml"
[[ -s "$work/txn-recoveryd.toml" ]] || fail "no txn-recoveryd.toml in the rendered ConfigMap"

# Every whole number an integer; the fraction kept where there is one.
if whole="$(grep -nE '= *-?[0-9]+\.0+ *$' "$work/txn-recoveryd.toml")"; then
  fail "whole numbers written as floats (the daemon refuses them for integer keys):"$'\n'"$whole"
fi
for line in 'workers = 8' 'batch_size = 1000' 'retention_max_batches = 0' \
  'max_operations = 500' 'jitter = 0.25' 'listen = "0.0.0.0:9500"'; do
  grep -qxF "$line" <(sed 's/^ *//' "$work/txn-recoveryd.toml") ||
    fail "the rendered configuration lacks '$line':"$'\n'"$(cat "$work/txn-recoveryd.toml")"
done
echo "check-helm-config: $values renders whole numbers as integers"

if [[ -z "$binary" || ! -x "$binary" ]]; then
  echo "SKIPPED: txn-recoveryd check-config on the rendered configuration: no daemon binary${binary:+ at $binary} (pass --binary)"
  exit 77
fi
# The Secret's URI where uri_file points (check-config reads the file, connects nowhere).
echo "mongodb://db.example:27017" >"$work/mongodb-uri"
sed -i "s|/var/run/secrets/txn-recoveryd/mongodb-uri|$work/mongodb-uri|" "$work/txn-recoveryd.toml"
if ! env -u TXN_RECOVERYD_MONGODB_URI "$binary" check-config --config "$work/txn-recoveryd.toml" \
  >"$work/check.log" 2>&1; then
  fail "txn-recoveryd check-config refuses the chart's configuration:"$'\n'"$(cat "$work/check.log")"
fi
echo "check-helm-config: txn-recoveryd check-config accepts the configuration rendered from $values"
