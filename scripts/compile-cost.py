#!/usr/bin/env python3
"""The translation units that cost the most to compile, by measures that do not depend on
the machine's load: what the preprocessor hands the compiler (lines and bytes of `c++ -E`
with each file's own flags from compile_commands.json) and, with --cpu, the compiler's own
CPU seconds (user + system of the child, not wall time: another build on the machine slows
the wall clock, much less the CPU time a compile needs).

Usage: scripts/compile-cost.py [--build DIR] [-n N] [--cpu] [--filter REGEX] [--by-library FILE]

  --build DIR        the build tree holding compile_commands.json (default: build/)
  -n N               the N heaviest (default 10); 0: all
  --cpu              also compile each file (one at a time, to a temporary object; slow)
  --filter REGEX     only the files whose path matches
  --by-library FILE  the preprocessed lines of FILE by where they come from (the C++ library,
                     nlohmann/json, CLI11, spdlog/fmt, toml++, gtest/gmock, httplib, mongoc,
                     the project's own headers...), heaviest first

Prints a Markdown table. One compiler runs at a time, whatever the machine has.
"""

import argparse
import json
import os
import pathlib
import re
import resource
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Where a preprocessed line comes from, by the path of its header (first match wins).
LIBRARIES = [
    ("nlohmann/json", r"/nlohmann/"),
    ("CLI11", r"/CLI/"),
    ("spdlog", r"/spdlog/"),
    ("fmt", r"/fmt/"),
    ("toml++", r"/toml\+\+/"),
    ("gmock", r"/gmock/"),
    ("gtest", r"/gtest/"),
    ("httplib", r"/httplib\.h$"),
    ("mongoc/bson", r"/lib(mongoc|bson)-1\.0/"),
    ("yaml-cpp", r"/yaml-cpp/"),
    ("openssl", r"/openssl/"),
    ("C++ library", r"/c\+\+/|/x86_64-linux-gnu/c\+\+/"),
    ("C library and system", r"^/usr/include/|^/usr/lib/gcc/"),
]


def commands(build):
    db = json.loads((build / "compile_commands.json").read_text())
    out = {}
    for entry in db:
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        # Drop the object output and the dependency file; keep every flag that shapes the code.
        kept, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MT", "-MQ"):
                skip = True
                continue
            if a in ("-c", "-MD", "-MMD") or a == entry["file"]:
                continue
            kept.append(a)
        out[entry["file"]] = (entry["directory"], kept)
    return out


def preprocess(directory, args, source):
    r = subprocess.run(args + ["-E", source], cwd=directory, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, check=True)
    return r.stdout


def cpu_seconds(directory, args, source):
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(args + ["-c", source, "-o", os.path.join(tmp, "x.o")], cwd=directory,
                       check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def short(path):
    try:
        return str(pathlib.Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return path


MARKER = re.compile(rb'^# \d+ "([^"]*)"')


def by_library(text):
    """Preprocessed lines by library, and the project's headers one by one."""
    counts = {}
    current = "?"
    for line in text.split(b"\n"):
        m = MARKER.match(line)
        if m:
            current = m.group(1).decode(errors="replace")
            continue
        if not line.strip():
            continue
        name = None
        for lib, pattern in LIBRARIES:
            if re.search(pattern, current):
                name = lib
                break
        if name is None:
            name = "project: " + short(current) if current.startswith("/") else current
        counts[name] = counts.get(name, 0) + 1
    return counts


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("-n", type=int, default=10)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--filter", default="")
    p.add_argument("--by-library", default="")
    a = p.parse_args()
    build = pathlib.Path(a.build)
    if not (build / "compile_commands.json").exists():
        sys.exit(f"compile-cost: no {build}/compile_commands.json (configure the build first)")
    cmds = commands(build)

    if a.by_library:
        source = str(pathlib.Path(a.by_library).resolve())
        if source not in cmds:
            sys.exit(f"compile-cost: {a.by_library} is not in compile_commands.json")
        directory, args = cmds[source]
        counts = by_library(preprocess(directory, args, source))
        total = sum(counts.values())
        print(f"| source of the lines of {short(source)} | non-blank lines | share |")
        print("|---|---:|---:|")
        for name, n in sorted(counts.items(), key=lambda kv: -kv[1])[: a.n or None]:
            print(f"| {name} | {n} | {100 * n / total:.0f} % |")
        print(f"| total | {total} | |")
        return

    rows = []
    for source, (directory, args) in sorted(cmds.items()):
        if a.filter and not re.search(a.filter, source):
            continue
        text = preprocess(directory, args, source)
        rows.append([source, text.count(b"\n"), len(text), None])
    rows.sort(key=lambda r: -r[1])
    rows = rows[: a.n] if a.n else rows
    if a.cpu:
        for r in rows:
            directory, args = cmds[r[0]]
            r[3] = cpu_seconds(directory, args, r[0])
    total_lines = sum(r[1] for r in rows)
    print("| translation unit | preprocessed lines | preprocessed KiB |" +
          (" CPU s |" if a.cpu else ""))
    print("|---|---:|---:|" + ("---:|" if a.cpu else ""))
    for name, lines, size, cpu in rows:
        print(f"| {short(name)} | {lines} | {size // 1024} |" + (f" {cpu:.1f} |" if a.cpu else ""))
    print(f"| total of these {len(rows)} | {total_lines} | |" + (
        f" {sum(r[3] or 0 for r in rows):.1f} |" if a.cpu else ""))


if __name__ == "__main__":
    main()
