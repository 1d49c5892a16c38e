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
#                and rendered, with the defaults, with every optional part, for a
#                restricted platform (ci/restricted-values.yaml) and with the web
#                configuration (ci/web-config-values.yaml, a certificate made here), the
#                manifests checked as kubernetes/'s are and against the Pod Security
#                Standards' restricted profile, its configuration and web configuration
#                through check-config, its rules alerts.yml's;
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
    --set-json 'extraContainers=[{"name":"tunnel","image":"registry.example/tunnel:1","volumeMounts":[{"name":"tunnel-certs","mountPath":"/certs","readOnly":true}],"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]' \
    --set-json 'extraVolumes=[{"name":"tunnel-certs","secret":{"secretName":"tunnel-certs"}}]' \
    >"$work/everything.yaml" || status=1
  # A restricted platform: no user, group or fsGroup named, an existing ServiceAccount, a
  # NetworkPolicy.
  "$helm" template recovery "$chart" --namespace bank -f "$chart/ci/restricted-values.yaml" \
    >"$work/restricted.yaml" || status=1
  # The web configuration: the chart's Secret from files, with a certificate made here, and
  # again with another key (its checksum must change); and an existing Secret without TLS.
  mkdir -p "$work/tls"
  for n in 1 2; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj /CN=txn-recoveryd -keyout "$work/tls/$n.key" -out "$work/tls/$n.crt" 2>/dev/null || status=1
    "$helm" template recovery "$chart" --namespace bank -f "$chart/ci/web-config-values.yaml" \
      --set-file "webConfig.files.tls\.crt=$work/tls/$n.crt" \
      --set-file "webConfig.files.tls\.key=$work/tls/$n.key" >"$work/web-$n.yaml" || status=1
  done
  "$helm" template recovery "$chart" --namespace bank --set webConfig.enabled=true \
    --set webConfig.existingSecret=txn-recoveryd-web --set webConfig.tls=false \
    --set serviceMonitor.enabled=true >"$work/web-existing.yaml" || status=1
  # The web configuration without a Secret or files is refused.
  if "$helm" template recovery "$chart" --set webConfig.enabled=true >/dev/null 2>&1; then
    echo "helm chart: webConfig.enabled without existingSecret or files renders"; status=1
  fi
  mkdir -p "$work/rendered"
  "$venv/bin/python" - "$root" "$work" <<'PY' || status=1
import sys, yaml
root, work = sys.argv[1], sys.argv[2]
def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]
renders = {name: load(f"{work}/{name}.yaml")
           for name in ("default", "everything", "restricted", "web-1", "web-2", "web-existing")}
default, everything, restricted = renders["default"], renders["everything"], renders["restricted"]
web, web_existing = renders["web-1"], renders["web-existing"]
for name, docs in renders.items():
    with open(f"{work}/rendered/{name}.yaml", "w") as f:
        yaml.safe_dump_all(docs, f)
problems = []
kinds = lambda docs: sorted(d["kind"] for d in docs)
if kinds(default) != ["ConfigMap", "Deployment", "Pod", "PodDisruptionBudget", "Service", "ServiceAccount"]:
    problems.append(f"default render: {kinds(default)}")
def one(docs, kind):
    return next(d for d in docs if d["kind"] == kind)
def pod(docs):
    return one(docs, "Deployment")["spec"]["template"]
def container(docs):
    return pod(docs)["spec"]["containers"][0]
# The pods' identity: the image's user by default, the platform's when the values say null;
# the chart's ServiceAccount without a token, or an existing one.
ids = lambda spec: {k: spec.get("securityContext", {}).get(k) for k in ("runAsUser", "runAsGroup", "fsGroup")}
if ids(pod(default)["spec"]) != {"runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001}:
    problems.append(f"default render: the pod's ids are {ids(pod(default)['spec'])}, not the image's 10001")
for d in (pod(restricted)["spec"], one(restricted, "Pod")["spec"]):
    if any(k in d.get("securityContext", {}) for k in ("runAsUser", "runAsGroup", "fsGroup")):
        problems.append(f"restricted render: a pod names its ids: {d['securityContext']}")
sa = one(default, "ServiceAccount")
if sa["metadata"]["name"] != "recovery" or sa.get("automountServiceAccountToken") is not False or \
        pod(default)["spec"].get("serviceAccountName") != "recovery" or \
        pod(default)["spec"].get("automountServiceAccountToken") is not False:
    problems.append("default render: the pods do not run as the chart's ServiceAccount, or a token is mounted")
if "ServiceAccount" in kinds(restricted) or pod(restricted)["spec"].get("serviceAccountName") != "txn-recoveryd-runner":
    problems.append("restricted render: serviceAccount.create=false does not use the existing ServiceAccount")
# The NetworkPolicy: the release's pods; ingress only to the metrics port, from the
# monitoring namespace and the release's pods; egress to the database, DNS and the metrics port.
if "NetworkPolicy" in kinds(default):
    problems.append("default render: a NetworkPolicy, which is optional")
np = one(restricted, "NetworkPolicy")["spec"]
selector = one(restricted, "Deployment")["spec"]["selector"]["matchLabels"]
if np["podSelector"]["matchLabels"] != selector or sorted(np["policyTypes"]) != ["Egress", "Ingress"]:
    problems.append("restricted render: the NetworkPolicy does not select the pods for ingress and egress")
(ingress,) = np["ingress"]
if ingress["ports"] != [{"port": "metrics", "protocol": "TCP"}] or ingress["from"] != [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        {"podSelector": {"matchLabels": selector}}]:
    problems.append(f"restricted render: ingress is not the metrics port from metricsFrom and the release: {ingress}")
egress = np["egress"]
if [e.get("to") for e in egress] != [[{"ipBlock": {"cidr": "10.20.0.0/16"}}], None, [{"podSelector": {"matchLabels": selector}}]] or \
        egress[0]["ports"] != [{"port": 27017, "protocol": "TCP"}] or {p["port"] for p in egress[1]["ports"]} != {53}:
    problems.append(f"restricted render: egress is not the database, DNS and the metrics port: {egress}")
# The web configuration: its Secret mounted, the variable naming web-config.yml in the
# mount, HTTPS probes and scrapes, its checksum on the pods (changing with the files), and
# no plain-HTTP `helm test`.
secret = one(web, "Secret")
if sorted(secret["stringData"]) != ["tls.crt", "tls.key", "web-config.yml"]:
    problems.append(f"web render: the Secret holds {sorted(secret['stringData'])}")
mounts = {m["name"]: m["mountPath"] for m in container(web)["volumeMounts"]}
volumes = {v["name"]: v for v in pod(web)["spec"]["volumes"]}
env = {e["name"]: e.get("value") for e in container(web).get("env", [])}
if volumes.get("web-config", {}).get("secret", {}).get("secretName") != secret["metadata"]["name"] or \
        env.get("TXN_RECOVERYD_HTTP_WEB_CONFIG") != mounts.get("web-config", "?") + "/web-config.yml":
    problems.append("web render: web-config.yml is not mounted where TXN_RECOVERYD_HTTP_WEB_CONFIG points")
schemes = {container(web)[p]["httpGet"].get("scheme") for p in ("livenessProbe", "readinessProbe")}
if schemes != {"HTTPS"} or one(web, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] != "https" or \
        "basicAuth" not in one(web, "ServiceMonitor")["spec"]["endpoints"][0]:
    problems.append("web render: the probes or the ServiceMonitor do not speak HTTPS with credentials")
if {container(default)[p]["httpGet"].get("scheme") for p in ("livenessProbe", "readinessProbe")} != {"HTTP"}:
    problems.append("default render: the probes do not speak HTTP")
annotations = lambda docs: pod(docs)["metadata"]["annotations"]
if "checksum/web-config" not in annotations(web) or \
        annotations(web)["checksum/web-config"] == annotations(renders["web-2"])["checksum/web-config"]:
    problems.append("web render: checksum/web-config is missing or does not follow the Secret's files")
if "Pod" in kinds(web) or "Secret" in kinds(web_existing):
    problems.append("web render: a plain-HTTP helm test, or a Secret made beside an existing one")
existing = {v["name"]: v for v in pod(web_existing)["spec"]["volumes"]}
if existing.get("web-config", {}).get("secret", {}).get("secretName") != "txn-recoveryd-web" or \
        {container(web_existing)[p]["httpGet"].get("scheme") for p in ("livenessProbe", "readinessProbe")} != {"HTTP"}:
    problems.append("web render: an existing Secret without TLS is not mounted, or its probes speak HTTPS")
# The web configuration's files, for check-config.
import os
os.makedirs(f"{work}/web", exist_ok=True)
for name, text in secret["stringData"].items():
    open(f"{work}/web/{name}", "w").write(text)
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
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" --crds "$crds" --restricted "$work"/rendered/*.yaml || status=1
  else
    "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" --restricted "$work/rendered/default.yaml" \
      "$work/rendered/restricted.yaml" || status=1
  fi
  "$venv/bin/python" "$root/scripts/check-k8s-manifests.py" --restricted --platform-ids \
    "$work/rendered/restricted.yaml" || status=1
  if env -u TXN_RECOVERYD_MONGODB_URI TXN_RECOVERYD_HTTP_WEB_CONFIG="$work/web/web-config.yml" \
    "$binary" check-config --config "$work/chart.toml" >/dev/null; then
    echo "deploy/helm/txn-recoveryd: the web configuration's Secret passes txn-recoveryd check-config"
  else
    status=1
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
