#!/usr/bin/env bash
# Checks the deployment material of deploy/ (CTest `deploy_material`):
#   kubernetes/  every manifest against the Kubernetes schema (scripts/check-k8s-manifests.py,
#                with the official Python client from PyPI in .cache/deploy-venv), and the
#                configuration in the ConfigMap through `txn-recoveryd check-config`;
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
