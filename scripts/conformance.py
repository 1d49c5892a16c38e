#!/usr/bin/env python3
"""Checks the engine's conformance trace against model/recovery.pml with SPIN.

The engine writes the trace when TXN_RECOVERY_TRACE_FILE names a file (txn_recovery/engine/
conformance_trace.h): one line per abstract step it takes, in the model's vocabulary. This
script turns the trace of each transaction into the events of model/trace_check.pml and asks
SPIN whether some behaviour of the model takes exactly those steps, the application, the
clock and everything unlogged left to SPIN's search. It implements no rule of the protocol:
it renames, orders and drops lines as said below, and the model decides.

    scripts/conformance.py TRACE [--work DIR] [--expect-fail] [--verbose]

What it does with the lines (docs/proof.md, "Conformance"):
  - "world NAME" starts a world: a fresh database (a test's own backend); each world is
    checked on its own, and each transaction in it on its own (the model's one transaction).
  - The daemons of a transaction are the model's daemons 0 and 1 in the order they first
    appear; a transaction driven by more than two is not checked (reported).
  - A write that failed as a whole (ok=err: the daemon killed, its connection lost) may or
    may not have reached the server: optional, its match unknown, and so is a release the
    same visit sends after it. The daemon's next visit is a new process of the model.
  - A visit (a read and what follows it, up to the daemon's next read) that sent no write
    is dropped: it changed no variable of the model.
  - The writes of one bulk are unordered: consecutive lines of one daemon of the same
    participant phase are put in step order (the model's order).
  - A write the engine did not send (sent=0) is optional: the model's same write matching
    nothing, or no step at all. The read after an apply whose bulk left its match unknown
    (ok=?) is optional likewise.
  - The read back after an apply (cannot) is dropped where that apply matched: the engine
    reads a whole bulk back when any of it missed, the model only the write that missed.
  - A write sent under a lease after its local deadline (live=0) is the model's failed
    local check followed by that write, which the model's daemon never makes.
Exit status: 0 when every checked transaction conforms (or, with --expect-fail, when at
least one does not); 1 otherwise; 2 on a usage or tool error.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "model", "trace_check.pml")

# The model's codes (model/recovery.pml: S_*, A_*, E_*).
STATES = {"initial": 1, "pending": 2, "applied": 3, "done": 4, "canceling": 5,
          "cancelled": 6, "resuming": 7, "none": 0}
STATE_NAMES = {v: k for k, v in STATES.items()}
ACTIONS = {"cancel": 1, "resume": 2, "rollback": 3, "finish": 4, "finish-rollback": 5,
           "check-late-writes": 6}
EVENTS = {"read": 1, "preread": 2, "claim": 3, "readp": 4, "apply": 5, "cannot": 6,
          "undo": 7, "finish": 8, "to": 9, "untrace": 10, "late": 11, "release": 12,
          "deadline": 13}
FINISH_AS = {"none": 0, "pull": 1, "dup": 2}
# Participant phases whose writes go in one unordered bulk, by step.
BULK = {"apply": 0, "cannot": 0, "undo": 1, "finish": 2, "untrace": 3, "late": 4}
UNDER_LEASE = {"apply", "undo", "finish", "to"}


def parse(path):
    """[(world name, [line dict])], each line dict with its number and text."""
    worlds = [("(before any world)", [])]
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, text in enumerate(f, 1):
            text = text.rstrip("\n")
            if text.startswith("world "):
                worlds.append((text[6:], []))
                continue
            fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
            if "e" not in fields or "d" not in fields or "t" not in fields:
                continue
            fields["line"], fields["text"] = n, text
            worlds[-1][1].append(fields)
    return [w for w in worlds if w[1]]


def events_of(lines):
    """The model's events for one transaction's lines, or (None, why) when it maps onto
    no configuration of the model."""
    reads = [ln for ln in lines if ln["e"] == "read"]
    for r in reads:
        if r.get("p") != "transfer" or r.get("n") != "2":
            return None, "profile %s with %s steps: not the model's transfer" % (
                r.get("p"), r.get("n"))
    # A write that failed as a whole (ok=err: the daemon killed, the connection lost) may
    # or may not have reached the server: optional, its match unknown, and so is a release
    # the same visit sends after it. The daemon's model process may be stopped anywhere in
    # that action, so its next visit is a new process of the model (a restart).
    kept, broken, life = [], set(), {}
    for ln in lines:
        ln = dict(ln)
        d = ln["d"]
        if ln["e"] == "read" and d in broken:
            broken.discard(d)
            life[d] = life.get(d, 1) + 1
        if life.get(d, 1) > 1:
            ln["d"] = "%s (restarted %d)" % (d, life[d] - 1)
        if ln.get("ok") == "err" or (d in broken and ln["e"] == "release"):
            ln["ok"], ln["maybe"] = "?", True
            broken.add(d)
        kept.append(ln)
    # Drop the visits that sent nothing.
    visits, current = [], {}
    for ln in kept:
        if ln["e"] == "read" or ln["d"] not in current:
            current[ln["d"]] = []
            visits.append(current[ln["d"]])
        current[ln["d"]].append(ln)
    sent = set()
    for v in visits:
        if any(ln.get("sent") == "1" for ln in v):
            sent.update(id(ln) for ln in v)
    kept = [ln for ln in kept if id(ln) in sent]
    daemons = []
    for ln in kept:
        if ln["d"] not in daemons:
            daemons.append(ln["d"])
    if len(daemons) > 2:
        return None, "written by %d daemons: the model has two" % len(daemons)
    # Put each bulk in step order.
    out, i = [], 0
    while i < len(kept):
        ln = kept[i]
        if ln["e"] in BULK:
            j = i
            while (j < len(kept) and kept[j]["d"] == ln["d"] and kept[j]["e"] in BULK
                   and BULK[kept[j]["e"]] == BULK[ln["e"]]):
                j += 1
            group = sorted(kept[i:j], key=lambda x: (int(x.get("s", 0)), x["e"] != "apply"))
            out.extend(group)
            i = j
        else:
            out.append(ln)
            i += 1
    events, unknown_apply, matched_apply = [], set(), set()
    for ln in out:
        d, e = daemons.index(ln["d"]), ln["e"]
        if e == "finishread":
            continue  # the finish's read after its claim: not a step of the default model
        if e == "apply":
            (matched_apply.add if ln.get("ok") == "1" else matched_apply.discard)(
                (d, int(ln.get("s", 0))))
        if e == "cannot" and (d, int(ln.get("s", 0))) in matched_apply:
            continue  # a bulk is read back whole; the model reads only after a miss
        s, x = int(ln.get("s", 0)), 0
        ok = ln.get("ok", "1")
        o = -1 if ok == "?" else int(ok)
        opt = 1 if ln.get("sent") == "0" or ln.get("maybe") else 0
        if e == "read":
            st = ln["st"]
            if st == "pending" and ln.get("over") == "1":
                st = "resuming"
            s, x, o = STATES[st], ACTIONS.get(ln["act"], 0), 1
        elif e in ("preread", "readp"):
            x, o = int(ln["rd"]), 1
        elif e == "claim":
            s = STATES["resuming" if ln["to"] == "pending" else ln["to"]]
        elif e == "to":
            s = STATES[ln["to"]]
        elif e == "cannot":
            x, o = int(ln["v"]), 1
            if (d, s) in unknown_apply:
                opt = 1
        elif e == "finish":
            x = FINISH_AS[ln["as"]]
        elif e == "deadline":
            o = 1
        if e == "apply" and o == -1:
            unknown_apply.add((d, s))
        if e in UNDER_LEASE and ln.get("live") == "0":
            # the local check found the deadline passed; the model's daemon then stops
            events.append((d, EVENTS["deadline"], 0, 0, 1, 0, ln))
        events.append((d, EVENTS[e], s, x, o, opt, ln))
    return (events, daemons), None


def build_pan(work):
    os.makedirs(work, exist_ok=True)
    pan = os.path.join(work, "pan")
    if os.path.exists(pan) and os.path.getmtime(pan) > max(
            os.path.getmtime(MODEL), os.path.getmtime(os.path.join(ROOT, "model", "recovery.pml"))):
        return pan
    subprocess.run(["spin", "-a", "-DND=2", "-DNTX=1", MODEL], cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["gcc", "-O1", "-DSAFETY", "-w", "-o", "pan", "pan.c"], cwd=work, check=True)
    return pan


def check(pan, events, work):
    """(conforms, index of the first line no behaviour takes, the model's state there)."""
    fd, path = tempfile.mkstemp(suffix=".ev", dir=work)
    with os.fdopen(fd, "w") as f:
        for ev in events:
            f.write(" ".join(str(v) for v in ev[:6]) + "\n")
    try:
        r = subprocess.run([pan, "-n", "-m100000"], cwd=work, capture_output=True, text=True,
                           env=dict(os.environ, TRACE_EVENTS=path), timeout=300)
    finally:
        os.unlink(path)
    out = r.stdout
    if "assertion violated (ti!=ntr)" in out:
        return True, None, None
    if "assertion violated" in out:
        m = re.search(r"assertion violated .*", out)
        return False, None, "the model's own property broken on the way: " + m.group(0)
    took = re.findall(r"conformance: took (\d+) (.*)", out)
    best = int(took[-1][0]) if took else 0
    state = took[-1][1] if took else "(no line taken)"
    m = re.match(r"st=(\d+)", state)
    if m:
        state = "st=%s%s" % (STATE_NAMES.get(int(m.group(1)), m.group(1)), state[m.end():])
    return False, best, state


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "conformance"))
    ap.add_argument("--expect-fail", action="store_true",
                    help="succeed only if some transaction does not conform (a seeded bug)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    try:
        pan = build_pan(a.work)
    except (OSError, subprocess.CalledProcessError) as e:
        print("conformance: cannot build the checker: %s" % e, file=sys.stderr)
        return 2
    worlds = parse(a.trace)
    checked = conform = 0
    skipped, failed = {}, []
    for name, lines in worlds:
        by_txn = {}
        for ln in lines:
            by_txn.setdefault(ln["t"], []).append(ln)
        for txn, tl in by_txn.items():
            mapped, why = events_of(tl)
            if mapped is None:
                skipped[why] = skipped.get(why, 0) + 1
                continue
            events, daemons = mapped
            if not events:
                continue
            checked += 1
            ok, at, state = check(pan, events, a.work)
            if ok:
                conform += 1
                if a.verbose:
                    print("conforms: %s, transaction %s (%d events)" % (name, txn, len(events)))
                continue
            failed.append((name, txn, events, daemons, at, state))
    for name, txn, events, daemons, at, state in failed:
        print("DOES NOT CONFORM: %s, transaction %s" % (name, txn))
        for i, ev in enumerate(events):
            mark = ">>" if i == at else "  "
            print("  %s %2d daemon %d  %s" % (mark, i, ev[0], ev[6]["text"]))
            if i == at:
                print("     no behaviour of the model takes this line; the model's state after "
                      "the line before: %s" % state)
        if at is None:
            print("  %s" % state)
        print("  (daemons: %s)" % ", ".join("%d=%s" % (i, d) for i, d in enumerate(daemons)))
    print("conformance: %d worlds, %d transactions checked, %d conform, %d do not" %
          (len(worlds), checked, conform, len(failed)))
    for why, n in sorted(skipped.items()):
        print("conformance: not checked: %d transactions (%s)" % (n, why))
    if a.expect_fail:
        return 0 if failed else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
