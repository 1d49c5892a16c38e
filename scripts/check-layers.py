#!/usr/bin/env python3
"""Checks the layers of docs/architecture.md against every #include of lib/ and daemon/.

Usage: scripts/check-layers.py [ROOT]   (ROOT defaults to the checkout holding this script)

Each file belongs to a layer: lib/src/<layer>/... and the public header
lib/include/txn_recovery/<layer>/X.h to <layer>; daemon/<folder>/... to daemon/<folder>, and the
files directly in daemon/ to "daemon" (the top). A public header is implemented by
lib/src/<layer>/X.cc (types-only headers excepted: TYPES_ONLY), so that where a header lives
says which layer it belongs to. The daemon names its own headers by folder from the checkout's
root ("daemon/serving/metrics.h"), as the library's are named "txn_recovery/<layer>/X.h".

An include, quoted or in angle brackets (an angle-bracket include is the project's when it
names a header of the tree: txn_recovery/..., daemon/..., or a file name the tree has), is a
violation when it reaches a layer its file may not use (USES), when the daemon reaches a
private header of lib/src, when the daemon names its own header by its bare name, or when it
names a header the check cannot place. The layers the includes actually join may not form a
cycle either, whatever USES says: each cycle is a violation, with an include of each step.
Prints one line per violation, `file:line: <layer> includes <header> of <layer> <why>`, then
one per cycle, and exits 1
when there is any.
"""

import pathlib
import re
import sys

# The layers a file of each layer may include.
#
# lib: base -> shapes -> engine -> tools, each using only those before it; the stores
# implement the Store interface on base alone, and the engine and the tools reach the database
# through them.
#
# daemon: on top of every lib layer, through the public headers only (PRIVATE_PREFIXES). Its
# folders in this order, each using only those before it:
#   daemon/base          what every part of the daemon speaks with its operator: exit codes,
#                        the build's revision, an _id as reports show it, "did you mean",
#                        whether stderr is the journal. Nothing of the daemon below it.
#   daemon/serving       the HTTP endpoint (its listen address, its web configuration file, TLS,
#                        basic authentication), the metrics registry, systemd notifications:
#                        the pieces the configuration configures, which know nothing of it.
#   daemon/configuration the TOML file and the environment: it composes the settings of the
#                        pieces it configures (serving's HttpSecurity, the library's
#                        WatchSpec), as lib's engine composes its own parts, so it sits above
#                        them.
#   daemon/logging       the log sinks; their format is a configuration value (LogFormat).
#   daemon/commands      what an operator types once (sweep, inspect, explain, retry, ...):
#                        they log, read the configuration, write metrics textfiles.
#   daemon/run           `txn-recoveryd run`, the long-running mode: the scheduler and its
#                        parts; it sweeps through the commands' code.
#   daemon               the program: main() and the command line, which dispatches to every
#                        command, `run` included.
LIB = {"base", "shapes", "stores", "engine", "tools"}
DAEMON_ORDER = (
    "daemon/base",
    "daemon/serving",
    "daemon/configuration",
    "daemon/logging",
    "daemon/commands",
    "daemon/run",
    "daemon",
)
USES = {
    "base": {"base"},
    "shapes": {"base", "shapes"},
    "stores": {"base", "stores"},
    "engine": {"base", "shapes", "stores", "engine"},
    "tools": {"base", "shapes", "stores", "engine", "tools"},
}
for index, layer in enumerate(DAEMON_ORDER):
    USES[layer] = LIB | set(DAEMON_ORDER[: index + 1])

# A public header is in the layer of the .cc that implements it; the check verifies that the
# .cc named here exists in that layer, so the table cannot drift from the tree unnoticed.

# Headers with no .cc of their own (types only), placed by what they declare, not by a file:
#   thresholds.h: a watch's ages; the shapes validate them (config_problem.h), so they may not
#     live above the shapes.
TYPES_ONLY = {"thresholds.h"}

LAYERS_OF_SRC = ("base", "shapes", "engine", "stores", "tools")
PRIVATE_PREFIXES = tuple(layer + "/" for layer in LAYERS_OF_SRC)
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ANGLED = re.compile(r"^\s*#\s*include\s*<([^>]+)>")


def layer_of_file(rel):
    parts = rel.parts
    if parts[:2] == ("lib", "src") and len(parts) > 3 and parts[2] in LAYERS_OF_SRC:
        return parts[2]
    if parts[:3] == ("lib", "include", "txn_recovery"):
        return parts[3] if len(parts) > 4 and parts[3] in LAYERS_OF_SRC else None
    if parts[0] == "daemon":
        return "daemon/" + parts[1] if len(parts) > 2 else "daemon"
    return None


class Tree:
    def __init__(self, root):
        self.root = root
        # The daemon's headers by file name, to place a bare name (a violation, but its layer
        # still counts for the cycles).
        self.daemon_by_name = {}
        for p in (root / "daemon").rglob("*.h"):
            self.daemon_by_name.setdefault(p.name, []).append(p.relative_to(root))
        self.names = {p.name for base in ("lib", "daemon") for p in (root / base).rglob("*.h")}

    def is_project(self, header):
        """Whether an angle-bracket include names a header of the tree."""
        return (
            header.startswith(("txn_recovery/", "daemon/"))
            or header.startswith(PRIVATE_PREFIXES) and (self.root / "lib" / "src" / header).is_file()
            or pathlib.PurePosixPath(header).name in self.names
        )

    def place(self, header, includer_rel):
        """(layer, problem) of an included header; layer None when it cannot be placed."""
        if header.startswith("txn_recovery/"):
            parts = header.split("/")
            if len(parts) == 3 and parts[1] in LAYERS_OF_SRC:
                return parts[1], None
            return None, "of no known layer"
        if header.startswith("daemon/"):
            if not (self.root / header).is_file():
                return None, "which does not exist"
            return layer_of_file(pathlib.PurePosixPath(header)), None
        if header.startswith(PRIVATE_PREFIXES):
            layer = header.split("/", 1)[0]
            if includer_rel.parts[0] == "daemon":
                return layer, "(a private header)"
            return layer, None
        if includer_rel.parts[0] == "daemon":
            found = self.daemon_by_name.get(pathlib.PurePosixPath(header).name, [])
            if len(found) == 1:
                return layer_of_file(found[0]), f"by its bare name (write \"{found[0].as_posix()}\")"
            return None, "by a bare name the check cannot place"
        return None, "of no known layer"


def find_cycles(edges):
    """Every elementary cycle's layers (each once, from its smallest name) of a small graph."""
    cycles = set()

    def walk(start, node, path):
        for nxt in sorted(edges.get(node, {})):
            if nxt == start:
                cycles.add(tuple(path))
            elif nxt not in path and nxt > start:
                walk(start, nxt, path + [nxt])

    for start in sorted(edges):
        walk(start, start, [start])
    return sorted(cycles)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    tree = Tree(root)
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

    # Layer -> layer it includes -> the first include that does it, for the cycles.
    edges = {}
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
            match = QUOTED.match(line)
            if not match:
                match = ANGLED.match(line)
                if not match or not tree.is_project(match.group(1)):
                    continue
            header = match.group(1)
            layer, problem = tree.place(header, rel)
            if layer is None:
                problems.append(f"{rel}:{number}: {own} includes {header} {problem}")
                continue
            why = [problem] if problem else []
            if layer not in USES[own]:
                why.append("a layer it may not use")
            if why:
                problems.append(f"{rel}:{number}: {own} includes {header} of {layer}, {', '.join(why)}")
            if layer != own:
                edges.setdefault(own, {}).setdefault(layer, f"{rel}:{number} includes {header}")

    for cycle in find_cycles(edges):
        steps = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        where = "; ".join(edges[a][b] for a, b in steps)
        problems.append(f"cycle: {' -> '.join(cycle + (cycle[0],))} ({where})")

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
