#!/usr/bin/env python3
"""Schema check of Kubernetes manifests, offline: every object is validated against the
typed models of the official Python client (PyPI `kubernetes`, generated from the
Kubernetes OpenAPI schema; its models forbid unknown fields). It reports an unknown kind
or apiVersion, an unknown or misspelt field anywhere, a value of the wrong type (a
string for an integer, a map for a list) and a missing required field, each with its
path. kubeconform does the same with schemas it downloads at run time; this needs only
the client installed (scripts/check-deploy.sh puts it in a virtualenv in the per-user cache).
Custom resources (prometheus-operator's PodMonitor, ServiceMonitor, PrometheusRule) are
validated against the openAPIV3Schema of their CustomResourceDefinition, read from the
files of --crds DIR, made as strict as the client's models: a field the schema does not
name is an error there too (the API server would drop it without a word).
With --restricted, every pod (a Pod, or a Deployment's template) must also meet the Pod
Security Standards' "restricted" profile, which namespaces enforce with the label
pod-security.kubernetes.io/enforce=restricted: non-root, no privilege escalation, every
capability dropped, the RuntimeDefault (or a Localhost) seccomp profile, none of the
host's namespaces, ports or paths, and only volumes of the kinds it allows. With
--platform-ids, no pod may name its user, group or fsGroup either (runAsUser, runAsGroup,
fsGroup), as OpenShift's restricted SCCs require: the platform assigns them.
Usage: check-k8s-manifests.py [--crds DIR] [--restricted] [--platform-ids] FILE.yaml...
"""
import pathlib
import sys

import jsonschema
import kubernetes.client as k8s
import pydantic
import yaml


def strict(schema):
    """The schema with additionalProperties false wherever it lists properties and neither
    allows other fields itself nor keeps unknown ones (x-kubernetes-preserve-unknown-fields)."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [strict(v) for v in schema]
    return schema


def load_crds(directory):
    """{(apiVersion, kind): a validator of its schema} for every CRD file in `directory`."""
    validators = {}
    for path in sorted(pathlib.Path(directory).glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            # metadata is the API server's ObjectMeta, which the CRD leaves open.
            schema["properties"]["metadata"] = {"type": "object"}
            validators[(f"{group}/{version['name']}", kind)] = jsonschema.Draft7Validator(schema)
    return validators


# The volume kinds the restricted profile allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}


def pod_spec(doc):
    """The pod spec a workload runs, or None for an object that runs none."""
    if doc.get("kind") == "Pod":
        return doc.get("spec") or {}
    template = (doc.get("spec") or {}).get("template")
    return (template or {}).get("spec") if doc.get("kind") in (
        "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet") else None


def restricted_problems(spec, platform_ids):
    """What in `spec` the restricted profile (and, with platform_ids, OpenShift's restricted
    SCC) refuses, as "path: why" strings."""
    problems = []
    pod = spec.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            problems.append(f"spec.{key}: the host's namespaces are not allowed")
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            problems.append(f"volume {v.get('name')}: {sorted(kinds - RESTRICTED_VOLUMES)} is not an allowed volume kind")
    containers = [("containers", c) for c in spec.get("containers") or []] + \
                 [("initContainers", c) for c in spec.get("initContainers") or []]
    for where, c in containers:
        sc = c.get("securityContext") or {}
        at = f"{where}[{c.get('name')}]"
        if not sc.get("runAsNonRoot", pod.get("runAsNonRoot")):
            problems.append(f"{at}: runAsNonRoot is not true (for it or the pod)")
        if sc.get("runAsUser", pod.get("runAsUser")) == 0:
            problems.append(f"{at}: runAsUser 0")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{at}: allowPrivilegeEscalation is not false")
        if sc.get("privileged"):
            problems.append(f"{at}: privileged")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            problems.append(f"{at}: capabilities.drop lacks ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{at}: capabilities.add {caps['add']}")
        seccomp = (sc.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{at}: seccompProfile is {seccomp!r}, not RuntimeDefault or Localhost")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                problems.append(f"{at}: hostPort {p['hostPort']}")
        if platform_ids:
            for key in ("runAsUser", "runAsGroup"):
                if key in sc:
                    problems.append(f"{at}: {key} is named; the platform assigns it")
    if platform_ids:
        for key in ("runAsUser", "runAsGroup", "fsGroup", "supplementalGroups"):
            if key in pod:
                problems.append(f"spec.securityContext.{key} is named; the platform assigns it")
    return problems


def model_for(api_version, kind):
    version = api_version.rpartition("/")[2]
    return getattr(k8s, version.capitalize() + (kind or ""), None)


def main(args):
    crds = {}
    if args[:1] == ["--crds"]:
        crds, args = load_crds(args[1]), args[2:]
    restricted = platform_ids = False
    while args[:1] in (["--restricted"], ["--platform-ids"]):
        restricted = restricted or args[0] == "--restricted"
        platform_ids = platform_ids or args[0] == "--platform-ids"
        args = args[1:]
    failed = 0
    for path in args:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs):
            kind, api = doc.get("kind"), doc.get("apiVersion", "")
            name = (doc.get("metadata") or {}).get("name", "?")
            where = f"{path}: {kind}/{name}"
            if (api, kind) in crds:
                errors = sorted(crds[(api, kind)].iter_errors(doc), key=lambda e: list(e.path))
                for err in errors:
                    loc = ".".join(str(p) for p in err.path)
                    print(f"{where}: {loc}: {err.message}")
                failed += bool(errors)
                if not errors:
                    print(f"{where}: valid {api} {kind} (its CustomResourceDefinition's schema)")
                continue
            spec = pod_spec(doc)
            if (restricted or platform_ids) and spec is not None:
                problems = restricted_problems(spec, platform_ids)
                for p in problems:
                    print(f"{where}: {p}")
                failed += bool(problems)
                if not problems:
                    print(f"{where}: meets the restricted profile"
                          + (", names no user, group or fsGroup" if platform_ids else ""))
            model = model_for(api, kind)
            if model is None:
                print(f"{where}: unknown kind {kind!r} of apiVersion {api!r}")
                failed += 1
                continue
            try:
                model.model_validate(doc)
            except pydantic.ValidationError as e:
                failed += 1
                for err in e.errors():
                    loc = ".".join(str(p) for p in err["loc"])
                    print(f"{where}: {loc}: {err['msg']}")
                continue
            print(f"{where}: valid {api} {kind}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
