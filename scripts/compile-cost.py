#!/usr/bin/env python3
"""The translation units that cost the most to compile, by measures that do not depend on
the machine's load: what the preprocessor hands the compiler (lines and bytes of `c++ -E`
with each file's own flags from compile_commands.json) and, with --cpu, the compiler's own
CPU seconds (user + system of the child, not wall time: another build on the machine slows
the wall clock, much less the CPU time a compile needs).

Usage: scripts/compile-cost.py [--build DIR] [-n N] [--cpu] [--tidy] [--filter REGEX]
                               [--by-library FILE]

  --build DIR        the build tree holding compile_commands.json (default: build/)
  -n N               the N heaviest (default 10); 0: all
  --cpu              also compile each file (one at a time, to a temporary object) and rank
                     by CPU seconds, not by lines: about 10 minutes for the whole tree on one
                     core of a 2-core machine; --filter narrows it
  --tidy             also run clang-tidy on each file as scripts/tidy.sh does (its cold pass,
                     one file at a time): its CPU seconds, ranked by them unless --cpu
  --filter REGEX     only the files whose path matches
  --by-library FILE  the preprocessed lines of FILE by where they come from (the C++ library,
                     nlohmann/json, CLI11, spdlog/fmt, toml++, gtest/gmock, httplib, mongoc,
                     the project's own headers...), heaviest first

Prints a Markdown table, the N heaviest and then the sum over every file measured. One
compiler runs at a time, whatever the machine has. Lines and CPU rank the files differently:
a test file's time goes mostly to generating its own code (-O2 -g), not to its headers.

  scripts/compile-cost.py                 # the 10 largest after preprocessing (seconds)
  scripts/compile-cost.py --cpu -n 10     # the 10 slowest to compile (minutes)
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


def tidy_seconds(build, source):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["clang-tidy", "-p", str(build), "--quiet",
                    f"--header-filter=^{ROOT}/(lib|daemon|tests|bench)/", source],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
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
    p.add_argument("--tidy", action="store_true")
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
        rows.append({"file": source, "lines": text.count(b"\n"), "kib": len(text) // 1024})
    for r in rows:
        directory, args = cmds[r["file"]]
        if a.cpu:
            r["cpu"] = cpu_seconds(directory, args, r["file"])
        if a.tidy:
            r["tidy"] = tidy_seconds(build, r["file"])
    key = "cpu" if a.cpu else "tidy" if a.tidy else "lines"
    rows.sort(key=lambda r: -r[key])
    columns = [("lines", "preprocessed lines"), ("kib", "preprocessed KiB")]
    columns += [("cpu", "CPU s")] if a.cpu else []
    columns += [("tidy", "clang-tidy CPU s")] if a.tidy else []

    def cell(r, c):
        return f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c])

    print("| translation unit | " + " | ".join(title for _, title in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for r in rows[: a.n] if a.n else rows:
        print(f"| {short(r['file'])} | " + " | ".join(cell(r, c) for c, _ in columns) + " |")
    total = {c: sum(r[c] for r in rows) for c, _ in columns}
    print(f"| all {len(rows)} measured | " + " | ".join(cell(total, c) for c, _ in columns) + " |")

if __name__ == "__main__":
    main()
