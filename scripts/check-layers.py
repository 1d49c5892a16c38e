#!/usr/bin/env python3
"""Checks the layers of docs/architecture.md against every #include "..." of lib/ and daemon/.

Usage: scripts/check-layers.py [ROOT]   (ROOT defaults to the checkout holding this script)

Each file belongs to a layer: lib/src/<layer>/... to <layer>; a public header
lib/include/txn_recovery/X.h to the layer of the lib/src file that implements it (HEADER_LAYER
below); daemon/... to "daemon". An include is a violation when it reaches a layer its file may
not use (USES), when the daemon reaches a private header of lib/src, or when it names a header
the check cannot place (a new public header must be entered in HEADER_LAYER, so that its layer
is a decision, not an accident). Prints one line per violation, `file:line: <layer> includes
<header> of <layer>`, and exits 1 when there is any.
"""

import pathlib
import re
import sys

# The layers a file of each layer may include. base -> shapes -> engine -> tools, each using only
# those before it; the stores implement the Store interface on base alone, and the engine and the
# tools reach the database through them. The daemon is placed on top: it may use every layer,
# through the public headers only (PRIVATE_PREFIXES).
USES = {
    "base": {"base"},
    "shapes": {"base", "shapes"},
    "stores": {"base", "stores"},
    "engine": {"base", "shapes", "stores", "engine"},
    "tools": {"base", "shapes", "stores", "engine", "tools"},
    "daemon": {"base", "shapes", "stores", "engine", "tools", "daemon"},
}

# A public header is in the layer of the .cc that implements it; the check verifies that the
# .cc named here exists in that layer, so the table cannot drift from the tree unnoticed.
HEADER_LAYER = {
    "candidates.h": "engine",
    "clock.h": "base",
    "config_problem.h": "shapes",
    "decision.h": "engine",
    "document.h": "base",
    "duration.h": "base",
    "filter.h": "base",
    "fleet_member.h": "engine",
    "indexes.h": "tools",
    "inspect.h": "tools",
    "membership.h": "engine",
    "memory_store.h": "stores",
    "mongo_store.h": "stores",
    "one_transaction.h": "engine",
    "orphans.h": "tools",
    "profile.h": "shapes",
    "query_log.h": "stores",
    "recovery_record.h": "base",
    "retention.h": "tools",
    "retention_policy.h": "shapes",
    "state_machine.h": "engine",
    "status.h": "base",
    "store.h": "stores",
    "sweeper.h": "engine",
    "thresholds.h": "shapes",
    "uri_redaction.h": "stores",
    "watch.h": "engine",
}

# Headers with no .cc of their own (types only), placed by what they declare, not by a file:
#   thresholds.h: a watch's ages; the shapes validate them (config_problem.h), so they may not
#     live above the shapes.
TYPES_ONLY = {"thresholds.h"}

LAYERS_OF_SRC = ("base", "shapes", "engine", "stores", "tools")
PRIVATE_PREFIXES = tuple(layer + "/" for layer in LAYERS_OF_SRC)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of_file(rel):
    parts = rel.parts
    if parts[:2] == ("lib", "src") and len(parts) > 3 and parts[2] in LAYERS_OF_SRC:
        return parts[2]
    if parts[:3] == ("lib", "include", "txn_recovery"):
        return HEADER_LAYER.get(parts[3])
    if parts[0] == "daemon":
        return "daemon"
    return None


def layer_of_include(header, includer_rel):
    """The layer of an included header, and whether it is private; (None, _) if unplaceable."""
    if header.startswith("txn_recovery/"):
        return HEADER_LAYER.get(header[len("txn_recovery/"):]), False
    if header.startswith(PRIVATE_PREFIXES):
        return header.split("/", 1)[0], True
    # A bare name: a file next to its includer (the daemon's own headers, revision.h generated
    # into the build tree from daemon/revision.cc.in).
    if includer_rel.parts[0] == "daemon":
        return "daemon", False
    return None, False


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = []

    for name, layer in sorted(HEADER_LAYER.items()):
        stem = name[: -len(".h")]
        if name in TYPES_ONLY:
            continue
        if not (root / "lib" / "src" / layer / (stem + ".cc")).is_file():
            problems.append(f"lib/include/txn_recovery/{name}: placed in {layer}, but lib/src/{layer}/{stem}.cc does not exist")
    for header in sorted((root / "lib" / "include" / "txn_recovery").glob("*.h")):
        if header.name not in HEADER_LAYER:
            problems.append(f"{header.relative_to(root)}: public header missing from HEADER_LAYER in scripts/check-layers.py")

    files = sorted(
        p
        for base in ("lib", "daemon")
        for p in (root / base).rglob("*")
        if p.is_file() and p.suffix in (".h", ".cc", ".in")
    )
    for path in files:
        rel = path.relative_to(root)
        own = layer_of_file(rel)
        if own is None:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            layer, private = layer_of_include(header, rel)
            if layer is None:
                problems.append(f"{rel}:{number}: {own} includes {header} of no known layer")
            elif own == "daemon" and private:
                problems.append(f"{rel}:{number}: {own} includes {header} of {layer} (a private header)")
            elif layer not in USES[own]:
                problems.append(f"{rel}:{number}: {own} includes {header} of {layer}")

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
