#!/usr/bin/env bash
# Checks the deployment material of deploy/ (CTest `deploy_material`):
#   kubernetes/  every manifest against the Kubernetes schema (scripts/check-k8s-manifests.py,
#                with the official Python client from PyPI in a virtualenv in the per-user
#                cache), and the configuration in the ConfigMap through `txn-recoveryd
#                check-config`;
#   prometheus-operator/  the PodMonitor, ServiceMonitor and PrometheusRule against the
#                operator's CRD schemas (its Go module, pinned, from proxy.golang.org),
#                the monitors' selectors against the manifests, and the PrometheusRule
#                against alerts.yml (scripts/prometheusrule.py --check);
#   helm/        the chart linted (helm, pinned, built from its Go module by scripts/helm.sh)
#                and rendered, the manifests checked as kubernetes/'s are, its
#                configuration through check-config, its rules alerts.yml's;
#   prometheus/  `promtool check rules` and `promtool test rules` (promtool from PATH, or
#                Debian's `prometheus` package, installed when this runs as root); every
#                alert fires and stays quiet in a test and has its section in
#                docs/runbook.md, linked as the package installs it;
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
# The tools fetched here are kept per user (as scripts/helm.sh and DocumentDB's build): a new
# clone, or CI's clean checkout, finds them.
cache="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}"
venv="$cache/deploy-venv"
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
crds="$cache/prometheus-operator-crds-$po_version"
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

echo "== helm chart"
chart="$root/deploy/helm/txn-recoveryd"
if ! "$venv/bin/python" -c 'import kubernetes, yaml, jsonschema' 2>/dev/null; then
  echo "SKIPPED: the chart's manifests: the Kubernetes Python client could not be installed (above)"
elif helm="$("$root/scripts/helm.sh" 2>"$work/helm.log")"; then
  "$helm" lint --strict "$chart" || status=1
  # Rendered with the defaults, and with every optional part and a changed configuration.
  "$helm" template recovery "$chart" --namespace bank >"$work/default.yaml" || status=1
  "$helm" template recovery "$chart" --namespace bank --set serviceMonitor.enabled=true \
    --set prometheusRule.enabled=true --set-string config.daemon.interval=30s \
    --set runbookBaseUrl=https://runbooks.example/txn-recoveryd.md \
    --set fullnameOverride=txn-recoveryd --set 'imagePullSecrets[0].name=regcred' \
    --set 'env[0].name=TXN_RECOVERYD_LOG_LEVEL' --set 'env[0].value=debug' \
    --set-json 'extraContainers=[{"name":"tunnel","image":"registry.example/tunnel:1","volumeMounts":[{"name":"tunnel-certs","mountPath":"/certs","readOnly":true}]}]' \
    --set-json 'extraVolumes=[{"name":"tunnel-certs","secret":{"secretName":"tunnel-certs"}}]' \
    >"$work/everything.yaml" || status=1
  mkdir -p "$work/rendered"
  "$venv/bin/python" - "$root" "$work" <<'PY' || status=1
import sys, yaml
root, work = sys.argv[1], sys.argv[2]
def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]
default, everything = load(f"{work}/default.yaml"), load(f"{work}/everything.yaml")
for name, docs in (("default", default), ("everything", everything)):
    with open(f"{work}/rendered/{name}.yaml", "w") as f:
        yaml.safe_dump_all(docs, f)
problems = []
kinds = lambda docs: sorted(d["kind"] for d in docs)
if kinds(default) != ["ConfigMap", "Deployment", "Pod", "PodDisruptionBudget", "Service"]:
    problems.append(f"default render: {kinds(default)}")
def one(docs, kind):
    return next(d for d in docs if d["kind"] == kind)
# `helm test`: a hook pod that asks the Service for /metrics.
test_pod = one(default, "Pod")
if test_pod["metadata"].get("annotations", {}).get("helm.sh/hook") != "test" or \
        {"name": "SERVICE", "value": one(default, "Service")["metadata"]["name"]} not in test_pod["spec"]["containers"][0]["env"]:
    problems.append("the helm test pod is not a test hook asking the release's Service")
# fullnameOverride, imagePullSecrets, extra env, extra containers and volumes.
deployment = one(everything, "Deployment")
pod_spec = deployment["spec"]["template"]["spec"]
if deployment["metadata"]["name"] != "txn-recoveryd" or one(everything, "Service")["metadata"]["name"] != "txn-recoveryd":
    problems.append("fullnameOverride does not name the Deployment and the Service")
if pod_spec.get("imagePullSecrets") != [{"name": "regcred"}]:
    problems.append("imagePullSecrets is not in the pod spec")
if [c["name"] for c in pod_spec["containers"]] != ["txn-recoveryd", "tunnel"] or \
        {"name": "TXN_RECOVERYD_LOG_LEVEL", "value": "debug"} not in pod_spec["containers"][0].get("env", []):
    problems.append("env or extraContainers did not reach the pod spec")
if "tunnel-certs" not in [v["name"] for v in pod_spec["volumes"]]:
    problems.append("extraVolumes did not reach the pod spec")
# A changed configuration changes the pods' checksum, so that an upgrade rolls them.
checksum = lambda docs: one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
if checksum(default) == checksum(everything):
    problems.append("a changed configuration leaves checksum/config as it was")
# The rules are alerts.yml's, each runbook_url at runbookBaseUrl (set for this render);
# the chart's copy is alerts.yml.
installed = 'runbook_url: "file:///usr/share/doc/txn-recoveryd/runbook.md#'
alerts_text = open(f"{root}/deploy/prometheus/alerts.yml").read()
alerts = yaml.safe_load(alerts_text.replace(installed, 'runbook_url: "https://runbooks.example/txn-recoveryd.md#'))
if installed not in alerts_text:
    problems.append("deploy/prometheus/alerts.yml: no runbook_url at the runbook the package installs")
if one(everything, "PrometheusRule")["spec"]["groups"] != alerts["groups"]:
    problems.append("the chart's PrometheusRule differs from deploy/prometheus/alerts.yml with runbookBaseUrl's links")
if open(f"{root}/deploy/helm/txn-recoveryd/files/alerts.yml").read() != open(f"{root}/deploy/prometheus/alerts.yml").read():
    problems.append("deploy/helm/txn-recoveryd/files/alerts.yml is not a copy of deploy/prometheus/alerts.yml")
sm, svc = one(everything, "ServiceMonitor"), one(everything, "Service")
if any(svc["metadata"]["labels"].get(k) != v for k, v in sm["spec"]["selector"]["matchLabels"].items()):
    problems.append("the chart's ServiceMonitor does not select its Service")
# The configuration, for check-config, with the Secret's URI where uri_file points.
config = one(everything, "ConfigMap")["data"]["txn-recoveryd.toml"]
open(f"{work}/chart-uri", "w").write("mongodb://db.example:27017\n")
open(f"{work}/chart.toml", "w").write(config.replace("/var/run/secrets/txn-recoveryd/mongodb-uri", f"{work}/chart-uri"))
# The README's sidecar snippet is sidecar.yaml's container and volumes.
readme = open(f"{root}/deploy/helm/txn-recoveryd/README.md").read()
snippet = yaml.safe_load(readme.split("```yaml\n")[1].split("```")[0])["spec"]
(sidecar,) = load(f"{root}/deploy/kubernetes/sidecar.yaml")
pod = sidecar["spec"]["template"]["spec"]
mine = lambda spec: [c for c in spec["containers"] if c["name"] == "txn-recoveryd"]
if mine(snippet) != mine(pod) or snippet["volumes"] != [v for v in pod["volumes"] if v["name"].startswith("txn-recoveryd")]:
    problems.append("the README's sidecar snippet differs from deploy/kubernetes/sidecar.yaml")
for p in problems:
    print("helm chart:", p)
if not problems:
    print("deploy/helm/txn-recoveryd: renders the manifests, rolls on a changed configuration, alerts.yml's rules, the sidecar snippet of sidecar.yaml")
sys.exit(1 if problems else 0)
PY
  if [[ -f "$crds/complete" ]]; then
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" --crds "$crds" "$work"/rendered/*.yaml || status=1
  else
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" "$work/rendered/default.yaml" || status=1
  fi
  if env -u TXN_RECOVERYD_MONGODB_URI "$binary" check-config --config "$work/chart.toml" >/dev/null; then
    echo "deploy/helm/txn-recoveryd: the rendered configuration passes txn-recoveryd check-config"
  else
    status=1
  fi
else
  echo "SKIPPED: helm is not installed and could not be built from its Go module here:"
  sed 's/^/  /' "$work/helm.log" | tail -5
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
    # The runbook as the package installs it; operators substitute their own address.
    m = re.fullmatch(r"file:///usr/share/doc/txn-recoveryd/runbook\.md#([a-z0-9-]+)", url)
    if not m:
        problems.append(f"{name}: runbook_url {url!r} is not a link to a section of the installed runbook")
    elif m.group(1) not in sections:
        problems.append(f"{name}: docs/runbook.md has no section #{m.group(1)}")
    elif not all(h in sections[m.group(1)] for h in ("What it means", "What to do")):
        problems.append(f"{name}: its runbook section lacks 'What it means' or 'What to do'")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"alerts.yml: {sum(1 for r in rules if r.get('alert'))} alerts, each fires and stays quiet in a test and has a runbook section")
PY

echo "== grafana dashboard"
python3 - "$root/deploy/grafana/txn-recoveryd.json" "$root/daemon" <<'PY' || status=1
import json, pathlib, re, sys
dashboard = json.load(open(sys.argv[1]))
# The metric names the daemon declares (metrics.cc, process_metrics.cc).
declared = set()
for f in pathlib.Path(sys.argv[2]).rglob("*.cc"):
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
