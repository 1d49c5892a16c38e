#!/usr/bin/env bash
# Checks the deployment material of deploy/ (CTest `deploy_material`):
#   kubernetes/  every manifest against the Kubernetes schema (scripts/check-k8s-manifests.py,
#                with the official Python client from PyPI in .cache/deploy-venv), and the
#                configuration in the ConfigMap through `txn-recoveryd check-config`;
#   prometheus/  `promtool check rules` and `promtool test rules` (promtool from PATH, or
#                Debian's `prometheus` package, installed when this runs as root);
#   grafana/     the dashboard is JSON and queries only metrics the daemon exports.
# A check whose tool cannot be installed here is skipped with the reason printed.
# Usage: scripts/check-deploy.sh --binary PATH/TO/txn-recoveryd
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary=""
while (($#)); do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    *) echo "usage: $0 --binary PATH" >&2; exit 64 ;;
  esac
done
[[ -x "$binary" ]] || { echo "check-deploy: no binary at '$binary'" >&2; exit 64; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

echo "== kubernetes manifests"
venv="$root/.cache/deploy-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kubernetes, yaml' 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 &&
    "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes pyyaml >"$work/pip.log" 2>&1 ||
    true
fi
if "$venv/bin/python" -c 'import kubernetes, yaml' 2>/dev/null; then
  "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" "$root"/deploy/kubernetes/*.yaml || status=1
  # The configuration the ConfigMap carries, with the Secret's URI where uri_file points.
  "$venv/bin/python" - "$root/deploy/kubernetes" "$work" <<'PY' || status=1
import sys, yaml
src, work = sys.argv[1], sys.argv[2]
config = yaml.safe_load(open(f"{src}/configmap.yaml"))["data"]["txn-recoveryd.toml"]
uri = yaml.safe_load(open(f"{src}/secret.yaml"))["stringData"]["mongodb-uri"]
open(f"{work}/mongodb-uri", "w").write(uri + "\n")
config = config.replace("/var/run/secrets/txn-recoveryd/mongodb-uri", f"{work}/mongodb-uri")
open(f"{work}/txn-recoveryd.toml", "w").write(config)
PY
  if env -u TXN_RECOVERYD_MONGODB_URI "$binary" check-config --config "$work/txn-recoveryd.toml" >/dev/null; then
    echo "deploy/kubernetes/configmap.yaml: the configuration passes txn-recoveryd check-config"
  else
    status=1
  fi
else
  echo "SKIPPED: the Kubernetes Python client could not be installed from PyPI here:"
  sed 's/^/  /' "$work/pip.log" 2>/dev/null | tail -5 || true
fi

echo "== prometheus rules"
if ! command -v promtool >/dev/null && [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
    >"$work/apt.log" 2>&1 || true
fi
if command -v promtool >/dev/null; then
  (cd "$root/deploy/prometheus" && promtool check rules alerts.yml && promtool test rules alerts_test.yml) ||
    status=1
else
  echo "SKIPPED: promtool is not installed and Debian's prometheus package could not be installed"
  tail -3 "$work/apt.log" 2>/dev/null || true
fi

echo "== grafana dashboard"
python3 - "$root/deploy/grafana/txn-recoveryd.json" "$root/daemon" <<'PY' || status=1
import json, pathlib, re, sys
dashboard = json.load(open(sys.argv[1]))
# The metric names the daemon declares (metrics.cc, process_metrics.cc).
declared = set()
for f in pathlib.Path(sys.argv[2]).glob("*.cc"):
    declared |= set(re.findall(r'Describe\("([a-z_:]+)"', f.read_text()))
exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
unknown = set()
for e in exprs:
    for name in re.findall(r"\b((?:txn_recoveryd|process)_[a-z_]+)", e):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if base not in declared:
            unknown.add(name)
if unknown:
    print("the dashboard queries metrics the daemon does not export:", sorted(unknown))
    sys.exit(1)
print(f"{sys.argv[1]}: {len(dashboard['panels'])} panels, {len(exprs)} queries, every metric exported")
PY
exit $status
