#!/usr/bin/env python3
"""Schema check of Kubernetes manifests, offline: every object is validated against the
typed models of the official Python client (PyPI `kubernetes`, generated from the
Kubernetes OpenAPI schema; its models forbid unknown fields). It reports an unknown kind
or apiVersion, an unknown or misspelt field anywhere, a value of the wrong type (a
string for an integer, a map for a list) and a missing required field, each with its
path. kubeconform does the same with schemas it downloads at run time; this needs only
the client installed (scripts/check-deploy.sh puts it in a virtualenv under .cache/).
Usage: check-k8s-manifests.py FILE.yaml...
"""
import sys

import kubernetes.client as k8s
import pydantic
import yaml


def model_for(api_version, kind):
    version = api_version.rpartition("/")[2]
    return getattr(k8s, version.capitalize() + (kind or ""), None)


def main(paths):
    failed = 0
    for path in paths:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs):
            kind, api = doc.get("kind"), doc.get("apiVersion", "")
            name = (doc.get("metadata") or {}).get("name", "?")
            where = f"{path}: {kind}/{name}"
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
