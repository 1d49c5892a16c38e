#!/usr/bin/env python3
"""Checks the layers of docs/architecture.md against every #include "..." of lib/ and daemon/.

Usage: scripts/check-layers.py [ROOT]   (ROOT defaults to the checkout holding this script)

Each file belongs to a layer: lib/src/<layer>/... and the public header
lib/include/txn_recovery/<layer>/X.h to <layer>; daemon/... to "daemon". A public header is
implemented by lib/src/<layer>/X.cc (types-only headers excepted: TYPES_ONLY), so that where
a header lives says which layer it belongs to. An include is a violation when it reaches a
layer its file may not use (USES), when the daemon reaches a private header of lib/src, or
when it names a header the check cannot place (a public header outside a layer directory).
Prints one line per violation, `file:line: <layer> includes <header> of <layer>`, and exits 1
when there is any.
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
        return parts[3] if len(parts) > 4 and parts[3] in LAYERS_OF_SRC else None
    if parts[0] == "daemon":
        return "daemon"
    return None


def layer_of_include(header, includer_rel):
    """The layer of an included header, and whether it is private; (None, _) if unplaceable."""
    if header.startswith("txn_recovery/"):
        parts = header.split("/")
        return (parts[1] if len(parts) == 3 and parts[1] in LAYERS_OF_SRC else None), False
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

    public = root / "lib" / "include" / "txn_recovery"
    for header in sorted(public.rglob("*.h")):
        rel = header.relative_to(public)
        if len(rel.parts) != 2 or rel.parts[0] not in LAYERS_OF_SRC:
            problems.append(f"{header.relative_to(root)}: a public header outside the layer directories ({', '.join(LAYERS_OF_SRC)})")
            continue
        layer, name = rel.parts
        if name not in TYPES_ONLY and not (root / "lib" / "src" / layer / (name[: -len(".h")] + ".cc")).is_file():
            problems.append(f"{header.relative_to(root)}: in {layer}, but lib/src/{layer}/{name[: -len('.h')]}.cc does not exist")

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
