#!/usr/bin/env python3
"""Checks that what a release says about itself is said alike (CTest `release_metadata`).

The maintainer identity is spelled in packaging/maintainer. The files that cannot read it
repeat it, and this script fails when one of them differs: the Debian package's
debian/control (Maintainer), debian/changelog (the latest entry's sign-off) and
debian/copyright (Upstream-Contact), the Helm chart's Chart.yaml and the container image's
MAINTAINER build argument. The license is Apache-2.0: LICENSE holds its text, and
debian/copyright (the tree's one copyright file, which the package and the image ship),
the image's labels and the chart say so.

The version is spelled in CMakeLists.txt (project(... VERSION X.Y.Z)), which --version and
txn_recoveryd_build_info come from. The files that cannot read it repeat it, and this
script fails when one differs: debian/changelog's latest entry (the package's Version: the
package is native, so the two are equal), the man page's header, the Containerfile's
VERSION build argument, Chart.yaml's appVersion, the image tag of deploy/kubernetes/ and of
the chart README's sidecar snippet, and CHANGELOG.md's latest release.

Usage: scripts/check-release-metadata.py   (python3 only, no build needed)
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent


def read(rel):
    return (root / rel).read_text()


def main():
    problems = []

    maintainer = read("packaging/maintainer").splitlines()[0].strip()
    m = re.fullmatch(r"([^<>]+) <([^<>@ ]+@[^<> ]+)>", maintainer)
    if not m:
        print(f"packaging/maintainer: not 'Name <address>': {maintainer!r}")
        return 1
    name, email = m.group(1), m.group(2)

    control = read("debian/control")
    field = re.search(r"\A(?:.+\n)*?Maintainer: (.*)$", control, re.M)  # the source stanza's
    if not field or field.group(1) != maintainer:
        problems.append(f"debian/control: Maintainer is not {maintainer!r}")

    copyright_text = read("debian/copyright")
    contact = re.search(r"^Upstream-Contact: (.*)$", copyright_text, re.M)
    if not contact or contact.group(1) != maintainer:
        problems.append(f"debian/copyright: Upstream-Contact is not {maintainer!r}")
    if not re.search(r"^Files: \*\n(?:.+\n)*?License: Apache-2\.0$", copyright_text, re.M):
        problems.append("debian/copyright: the stanza 'Files: *' does not say License: Apache-2.0")

    changelog = read("debian/changelog")
    signoffs = re.findall(r"^ -- (.*?)  \S", changelog, re.M)
    if not signoffs or signoffs[0] != maintainer:
        problems.append(f"debian/changelog: the latest entry is not signed by {maintainer!r}")

    chart = read("deploy/helm/txn-recoveryd/Chart.yaml")
    if not re.search(rf"^maintainers:\n  - name: {re.escape(name)}\n    email: {re.escape(email)}$",
                     chart, re.M):
        problems.append(f"deploy/helm/txn-recoveryd/Chart.yaml: maintainers is not {name!r} <{email}>")

    containerfile = read("packaging/Containerfile")
    arg = re.search(r'^ARG MAINTAINER="(.*)"$', containerfile, re.M)
    if not arg or arg.group(1) != maintainer:
        problems.append(f"packaging/Containerfile: ARG MAINTAINER is not {maintainer!r}")
    if 'org.opencontainers.image.authors="$MAINTAINER"' not in containerfile:
        problems.append("packaging/Containerfile: no org.opencontainers.image.authors label from MAINTAINER")
    if 'org.opencontainers.image.licenses="Apache-2.0"' not in containerfile:
        problems.append("packaging/Containerfile: no org.opencontainers.image.licenses=Apache-2.0 label")

    project = re.search(r"^project\(txn-recoveryd VERSION (\d+\.\d+\.\d+)\b", read("CMakeLists.txt"), re.M)
    if not project:
        print("CMakeLists.txt: no project(txn-recoveryd VERSION X.Y.Z)")
        return 1
    version = project.group(1)
    spelled = {
        "debian/changelog": re.search(r"\Atxn-recoveryd \(([^)]*)\)", changelog),
        "packaging/txn-recoveryd.8": re.search(r'^\.TH .* "txn-recoveryd ([^"]*)"', read("packaging/txn-recoveryd.8"), re.M),
        "packaging/Containerfile": re.search(r"^ARG VERSION=(\S*)$", containerfile, re.M),
        "deploy/helm/txn-recoveryd/Chart.yaml": re.search(r'^appVersion: "([^"]*)"$', chart, re.M),
        "CHANGELOG.md": re.search(r"^## \[(\d[^\]]*)\]", read("CHANGELOG.md"), re.M),
    }
    for rel in ("deploy/kubernetes/deployment.yaml", "deploy/kubernetes/sidecar.yaml",
                "deploy/helm/txn-recoveryd/README.md"):
        spelled[rel] = re.search(r"image: \S*/txn-recoveryd:(\S+)", read(rel))
    for rel, found in spelled.items():
        if not found or found.group(1) != version:
            problems.append(f"{rel}: version {found.group(1) if found else 'not found'}, CMakeLists.txt says {version}")

    license_text = read("LICENSE")
    if "Apache License\n                           Version 2.0, January 2004" not in license_text \
            or "END OF TERMS AND CONDITIONS" not in license_text:
        problems.append("LICENSE: not the text of the Apache License, Version 2.0")

    for p in problems:
        print(p)
    if not problems:
        print(f"release metadata: version {version} and maintainer {maintainer!r} everywhere, license Apache-2.0")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
