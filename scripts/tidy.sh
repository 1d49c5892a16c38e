#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy) over every source file of lib/, daemon/,
# tests/ and bench/ that build/compile_commands.json names, in parallel, and fails with the
# findings when there are any.
# A file's clean result is cached per user, keyed by the file, every project header it
# includes (transitively), its compile command, .clang-tidy and the versions of clang-tidy
# and the compiler: an unchanged file is not analysed again, in this checkout or a fresh
# clone (CI's), which keeps a warm run to seconds. Findings are never cached.
# Usage: scripts/tidy.sh [BUILD_DIR]   (default build/, configured by scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$(cd "${1:-$root/build}" && pwd)"
db="$build_dir/compile_commands.json"
[[ -s "$db" ]] || { echo "tidy: no $db (scripts/build.sh writes it)" >&2; exit 64; }
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy is not installed (scripts/deps.sh)" >&2; exit 1; }
cache="${TXN_RECOVERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/txn-recoveryd}/clang-tidy"
mkdir -p "$cache"

tools_key="$({ find "$root" -maxdepth 2 -name .clang-tidy | sort | xargs cat; clang-tidy --version; c++ --version; } | sha256sum | cut -c1-16)"

# One line per file to analyse: its key, its path. The includes are followed the way the
# compiler resolves quoted and angled names (the file's directory, then each -I), keeping
# only headers inside the checkout; paths of the checkout and the build directory are
# written relative to them, so that another clone of the same sources has the same keys.
keys="$(python3 - "$root" "$build_dir" "$tools_key" "$db" <<'PY'
import hashlib, json, os, re, shlex, sys

root, build_dir, tools_key, db = sys.argv[1:]
include = re.compile(rb'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
seen = {}

def includes(path, dirs):
    """The project headers that path includes, directly or not."""
    found, todo = set(), [path]
    while todo:
        current = todo.pop()
        with open(current, 'rb') as f:
            names = include.findall(f.read())
        for name in names:
            name = name.decode()
            for d in [os.path.dirname(current)] + dirs:
                candidate = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(candidate):
                    if candidate.startswith(root + '/') and candidate not in found:
                        found.add(candidate)
                        todo.append(candidate)
                    break
    return found

def relative(text):
    return text.replace(build_dir, '<build>').replace(root, '<root>')

for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry['directory'], entry['file']))
    rel = os.path.relpath(path, root)
    if rel.split('/')[0] not in ('lib', 'daemon', 'tests', 'bench'):
        continue
    args = entry.get('arguments') or shlex.split(entry['command'])
    dirs = [os.path.join(entry['directory'], a[2:]) for a in args if a.startswith('-I') and len(a) > 2]
    h = hashlib.sha256(tools_key.encode())
    h.update(relative(' '.join(args)).encode())
    for f in [path] + sorted(includes(path, dirs)):
        h.update(b'\0' + os.path.relpath(f, root).encode() + b'\0')
        with open(f, 'rb') as fh:
            h.update(fh.read())
    print(h.hexdigest()[:32], rel)
PY
)"

todo=()
total=0
while read -r key file; do
  total=$((total + 1))
  [[ -e "$cache/$key" ]] || todo+=("$key $file")
done <<<"$keys"
echo "tidy: $total files, $((total - ${#todo[@]})) clean before with the same inputs, ${#todo[@]} to analyse"
((${#todo[@]})) || exit 0

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# A file is clean when clang-tidy succeeds and reports nothing (a compiler error too is a
# finding); only then is its key stored.
tidy_one() {
  local key="$1" file="$2"
  if clang-tidy -p "$build_dir" --quiet --header-filter="^$root/(lib|daemon|tests|bench)/" \
    "$root/$file" >"$out/$key.log" 2>&1 && ! grep -qE ': (warning|error):' "$out/$key.log"; then
    echo "$file" >"$cache/$key"
  else
    mv "$out/$key.log" "$out/$key.findings"
  fi
}
export -f tidy_one
export root build_dir cache out
printf '%s\n' "${todo[@]}" | xargs -P"$(nproc)" -L1 bash -c 'tidy_one "$@"' _

shopt -s nullglob
failed=("$out"/*.findings)
((${#failed[@]})) || { echo "tidy: clean"; exit 0; }
# A header's finding shows once per file that includes it: printed in full once.
cat "${failed[@]}" | grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' |
  awk '/: (warning|error|note):/ { keep = !(($0) in shown); shown[$0] = 1 } keep'
echo "tidy: $(cat "${failed[@]}" | grep -E ': (warning|error):' | sort -u | wc -l) findings in ${#failed[@]} files (above)" >&2
exit 1
