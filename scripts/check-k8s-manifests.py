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
Usage: check-k8s-manifests.py [--crds DIR] FILE.yaml...
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


def model_for(api_version, kind):
    version = api_version.rpartition("/")[2]
    return getattr(k8s, version.capitalize() + (kind or ""), None)


def main(args):
    crds = {}
    if args[:1] == ["--crds"]:
        crds, args = load_crds(args[1]), args[2:]
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
