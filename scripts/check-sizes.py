#!/usr/bin/env python3
"""Checks that no class of lib/ or daemon/ is over 400 lines.

Usage: scripts/check-sizes.py [--limit N] [--all] [ROOT]   (ROOT: the checkout holding this script)

A class's size is what a reader has to hold to understand it: the lines of its definition
(from `class X` or `struct X` to its closing `};`) plus the lines of every member function
defined out of line (`X::F(...) {` to its closing `}`), wherever they are. A nested class is
measured on its own: `Outer::Inner::F` counts for `Outer::Inner`, and the lines of Inner's
definition are left out of Outer's. Functions are measured by clang-tidy
(readability-function-size in .clang-tidy, which scripts/tidy.sh applies), not here.

The sources are clang-formatted (.clang-format), which is what makes a line-based reading
exact enough: a definition's closing brace sits at its opening line's indentation.
Prints `file:line: class X is N lines (limit L)` for each class over the limit (every class
with --all) and exits 1 when there is any.
"""

import collections
import pathlib
import re
import sys

LIMIT = 400
CLASS = re.compile(r"^(\s*)(?:template\s*<[^>]*>\s*)?(class|struct)\s+(?:\[\[\w+\]\]\s+)?((?:\w+::)*\w+)(?:\s+final)?\s*(?::[^;{]*)?\{\s*$")
CLASS_HEAD = re.compile(r"^(\s*)(?:template\s*<[^>]*>\s*)?(class|struct)\s+((?:\w+::)*\w+)(?:\s+final)?\s*(?::[^;{]*)?$")
NAMESPACE = re.compile(r"^\s*namespace\b")
# An out-of-line member definition at column 0: `... A::B::F(` where F is a name, ~name or
# operator; the qualifier (A::B) names the class. Calls and declarations do not start at
# column 0 with a qualified name followed by a body.
MEMBER = re.compile(r"^(?!\s)(?!return\b)(?!//)(?!#)[^;(]*?\b((?:\w+::)+)(~?\w+|operator[^\s(]+)\s*\(")


def closing(lines, start, indent):
    """The index of the line closing the block opened at `start` with `indent`."""
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith(indent + "}") and not line.startswith(indent + " "):
            return i
    return len(lines) - 1


def measure(path, sizes, where, nested_lines):
    lines = path.read_text(errors="replace").splitlines()
    stack = []  # (qualified name, indent) of the classes open at the current line
    i = 0
    while i < len(lines):
        line = lines[i]
        while stack and i > stack[-1][2]:
            stack.pop()
        m = CLASS.match(line)
        head = None
        if m:
            head = (m.group(1), m.group(3), i)
        else:
            h = CLASS_HEAD.match(line)
            # A class head wrapped over lines: `class X` / `    : public Y {`.
            if h and i + 1 < len(lines) and lines[i + 1].rstrip().endswith("{") and ";" not in lines[i + 1]:
                head = (h.group(1), h.group(3), i)
        if head:
            indent, name, start = head
            opening = start if line.rstrip().endswith("{") else start + 1
            end = closing(lines, opening, indent)
            qualified = "::".join([s[0] for s in stack] + [name])
            n = end - start + 1
            sizes[qualified] += n
            where.setdefault(qualified, f"{path}:{start + 1}")
            if stack:
                nested_lines[stack[-1][0]] += n
            stack.append((qualified, indent, end))
            i = opening + 1
            continue
        m = MEMBER.match(line)
        if m and not NAMESPACE.match(line):
            qualifier = m.group(1)[:-2]
            # The signature may wrap; the body opens on the line ending with `{`.
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                end = closing(lines, j, "")
                owner = qualifier.split("::")[-1]
                key = next((k for k in sizes if k == qualifier or k.endswith("::" + qualifier)), qualifier)
                if owner:
                    sizes[key] += end - i + 1
                    where.setdefault(key, f"{path}:{i + 1}")
                i = end + 1
                continue
        i += 1


def main():
    args = sys.argv[1:]
    limit = LIMIT
    show_all = False
    if "--limit" in args:
        k = args.index("--limit")
        limit = int(args[k + 1])
        del args[k : k + 2]
    if "--all" in args:
        show_all = True
        args.remove("--all")
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    sizes = collections.Counter()
    where = {}
    nested = collections.Counter()
    files = sorted(p for d in ("lib", "daemon") for p in (root / d).rglob("*") if p.suffix in (".h", ".cc"))
    # Headers first, so that a class is known by its full name before its members are met.
    for path in sorted(files, key=lambda p: p.suffix != ".h"):
        measure(path, sizes, where, nested)
    over = []
    for name, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        own = n - nested[name]
        if show_all or own > limit:
            rel = where[name].replace(str(root) + "/", "")
            print(f"{rel}: class {name} is {own} lines (limit {limit})")
        if own > limit:
            over.append(name)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
