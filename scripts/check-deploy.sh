#!/usr/bin/env bash
# Checks the deployment material of deploy/ (CTest `deploy_material`):
#   kubernetes/  every manifest against the Kubernetes schema (scripts/check-k8s-manifests.py,
#                with the official Python client from PyPI in .cache/deploy-venv), and the
#                configuration in the ConfigMap through `txn-recoveryd check-config`;
#   prometheus-operator/  the PodMonitor, ServiceMonitor and PrometheusRule against the
#                operator's CRD schemas (its Go module, pinned, from proxy.golang.org),
#                the monitors' selectors against the manifests, and the PrometheusRule
#                against alerts.yml (scripts/prometheusrule.py --check);
#   prometheus/  `promtool check rules` and `promtool test rules` (promtool from PATH, or
#                Debian's `prometheus` package, installed when this runs as root); every
#                alert fires and stays quiet in a test and has its section in
#                docs/runbook.md;
#   grafana/     the dashboard is JSON and queries only metrics the daemon exports, each
#                per-watch gauge through max by (watch).
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
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kubernetes, yaml, jsonschema' 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null 2>&1 &&
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
      kubernetes==37.0.2 PyYAML==6.0.4 jsonschema==4.26.0 >"$work/pip.log" 2>&1 ||
    true
fi
# prometheus-operator's CustomResourceDefinitions (PodMonitor, ServiceMonitor,
# PrometheusRule), for the schema of deploy/prometheus-operator/: from the operator's Go
# module, pinned by version and checksum, through the Go module proxy.
po_version=v0.85.0
po_sha256=0bdb88ed823d0f2e86cf909638439b6ad1da744a228172c7411d9987527dc5d1
crds="$root/.cache/prometheus-operator-crds-$po_version"
if [[ ! -f "$crds/complete" ]]; then
  if curl -fsSL --max-time 300 -o "$work/operator.zip" \
    "https://proxy.golang.org/github.com/prometheus-operator/prometheus-operator/@v/$po_version.zip" \
    >"$work/curl.log" 2>&1 && echo "$po_sha256  $work/operator.zip" | sha256sum -c --quiet; then
    mkdir -p "$crds"
    for kind in podmonitors servicemonitors prometheusrules; do
      unzip -p "$work/operator.zip" \
        "github.com/prometheus-operator/prometheus-operator@$po_version/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" \
        >"$crds/$kind.yaml"
    done
    touch "$crds/complete"
  fi
fi
if "$venv/bin/python" -c 'import kubernetes, yaml, jsonschema' 2>/dev/null; then
  if [[ -f "$crds/complete" ]]; then
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" --crds "$crds" \
      "$root"/deploy/kubernetes/*.yaml "$root"/deploy/prometheus-operator/*.yaml || status=1
  else
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" "$root"/deploy/kubernetes/*.yaml || status=1
    echo "SKIPPED: deploy/prometheus-operator/ against its schema: the operator's module $po_version could not be fetched from proxy.golang.org"
    tail -3 "$work/curl.log" 2>/dev/null || true
  fi
  # The monitors select what the manifests deploy, by the port name they expose; the
  # PrometheusRule is alerts.yml's rules.
  "$venv/bin/python" - "$root" <<'PY' || status=1
import sys, yaml
root = sys.argv[1]
def docs(path):
    return [d for d in yaml.safe_load_all(open(f"{root}/{path}")) if d]
def has(labels, selector):
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())
problems = []
(pm,) = docs("deploy/prometheus-operator/podmonitor.yaml")
(sidecar,) = docs("deploy/kubernetes/sidecar.yaml")
pod = sidecar["spec"]["template"]
ports = {p["name"] for c in pod["spec"]["containers"] if c["name"] == "txn-recoveryd"
         for p in c.get("ports", [])}
if not has(pod["metadata"]["labels"], pm["spec"]["selector"]):
    problems.append("podmonitor.yaml does not select the pods of sidecar.yaml")
for e in pm["spec"]["podMetricsEndpoints"]:
    if e["port"] not in ports:
        problems.append(f"podmonitor.yaml: port {e['port']!r} is not the sidecar's ({sorted(ports)})")
(sm,) = docs("deploy/prometheus-operator/servicemonitor.yaml")
(svc,) = [d for d in docs("deploy/kubernetes/deployment.yaml") if d["kind"] == "Service"]
if not has(svc["metadata"]["labels"], sm["spec"]["selector"]):
    problems.append("servicemonitor.yaml does not select the Service of deployment.yaml")
for e in sm["spec"]["endpoints"]:
    if e["port"] not in {p["name"] for p in svc["spec"]["ports"]}:
        problems.append(f"servicemonitor.yaml: port {e['port']!r} is not one of the Service's")
for p in problems:
    print(p)
if not problems:
    print("deploy/prometheus-operator/: the monitors select the sidecar's pods and the Service, by their metrics port")
sys.exit(1 if problems else 0)
PY
  "$venv/bin/python" "$root/scripts/prometheusrule.py" --check || status=1
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
  "$root/scripts/install-debs.sh" prometheus >"$work/apt.log" 2>&1 || true
fi
if command -v promtool >/dev/null; then
  (cd "$root/deploy/prometheus" && promtool check rules alerts.yml && promtool test rules alerts_test.yml) ||
    status=1
else
  echo "SKIPPED: promtool is not installed and Debian's prometheus package could not be installed"
  tail -3 "$work/apt.log" 2>/dev/null || true
fi

# Every alert: a test in which it fires, and a runbook_url to a section of docs/runbook.md
# that says what it means and what to do.
yaml_python=python3
"$venv/bin/python" -c 'import yaml' 2>/dev/null && yaml_python="$venv/bin/python"
"$yaml_python" - "$root/deploy/prometheus" "$root/docs/runbook.md" <<'PY' || status=1
import re, sys
import yaml
rules_dir, runbook = sys.argv[1], sys.argv[2]
rules = [r for g in yaml.safe_load(open(f"{rules_dir}/alerts.yml"))["groups"] for r in g["rules"]]
tests = yaml.safe_load(open(f"{rules_dir}/alerts_test.yml"))["tests"]
firing = {c["alertname"] for t in tests for c in t.get("alert_rule_test", []) if c.get("exp_alerts")}
quiet = {c["alertname"] for t in tests for c in t.get("alert_rule_test", []) if not c.get("exp_alerts")}
# Sections of the runbook by their GitHub anchor, with their text.
sections, current = {}, None
for line in open(runbook):
    if line.startswith("## "):
        current = re.sub(r"[^a-z0-9 -]", "", line[3:].strip().lower()).replace(" ", "-")
        sections[current] = ""
    elif current:
        sections[current] += line
problems = []
for r in rules:
    name = r.get("alert")
    if not name:
        continue
    if name not in firing:
        problems.append(f"{name}: no test in alerts_test.yml in which it fires")
    if name not in quiet:
        problems.append(f"{name}: no test in alerts_test.yml in which it stays quiet")
    url = r.get("annotations", {}).get("runbook_url", "")
    m = re.fullmatch(r"https://\S+/docs/runbook\.md#([a-z0-9-]+)", url)
    if not m:
        problems.append(f"{name}: runbook_url {url!r} is not a link to a section of docs/runbook.md")
    elif m.group(1) not in sections:
        problems.append(f"{name}: docs/runbook.md has no section #{m.group(1)}")
    elif not all(h in sections[m.group(1)] for h in ("What it means", "What to do")):
        problems.append(f"{name}: its runbook section lacks 'What it means' or 'What to do'")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"alerts.yml: {len(rules)} alerts, each fires and stays quiet in a test and has a runbook section")
PY

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
# A gauge per watch is the same number on every instance that sweeps the watch: summed, two
# daemons seeing one quarantined transaction would show 2. Each is aggregated with max by
# (watch, ...), and never summed.
per_watch = ["txn_recoveryd_quarantined_transactions", "txn_recoveryd_oldest_stuck_age_seconds",
             "txn_recoveryd_stuck_transactions", "txn_recoveryd_paused",
             "txn_recoveryd_orphan_markers",
             "txn_recoveryd_last_successful_sweep_timestamp_seconds"]
summed = [e for e in exprs for g in per_watch
          if re.search(rf"\b{g}\b", e)
          and (not re.search(rf"max by \(watch[^)]*\) \(\s*{g}\b", e) or re.search(r"\bsum\b", e))]
if summed:
    print("per-watch gauges not aggregated with max by (watch):", summed)
    sys.exit(1)
print(f"{sys.argv[1]}: {len(dashboard['panels'])} panels, {len(exprs)} queries, every metric exported")
PY
exit $status
