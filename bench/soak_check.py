#!/usr/bin/env python3
"""Reconciles a soak run (bench/soak.sh): what each client heard, the ledger's rows and the smarthost's
copies, all by Message-ID. Prints the invariant table and the counts; exit status 1 if an invariant fails.

    python3 bench/soak_check.py REPLIES.jsonl LEDGER.tsv SINK_DIR
"""
import collections
import json
import os
import sys

replies_path, ledger_path, sink_dir = sys.argv[1:4]


def norm(mid):
    return mid.strip().strip("<>").strip()


replies = {}
for line in open(replies_path):
    rec = json.loads(line)
    replies[norm(rec["mid"])] = rec


def heard(rec):
    """'250', '451 4.3.0', '421 4.3.2', 'lost' ...: the code and, for 4xx/5xx, the enhanced code."""
    if rec.get("code") is None:
        return "lost (no reply)"
    code = str(rec["code"])
    words = rec.get("reply", "").split()
    if code.startswith("2") or not words or not words[0][:1].isdigit():
        return code
    return code + " " + words[0]


rows = collections.defaultdict(list)
for line in open(ledger_path):
    if not line.strip():
        continue
    mid, status = line.rstrip("\n").split("\t")[:2]
    rows[norm(mid)].append(status)

copies = collections.Counter()
for name in os.listdir(sink_dir):
    with open(os.path.join(sink_dir, name), "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line == "":
                break
            if line.lower().startswith("message-id:"):
                copies[norm(line.split(":", 1)[1])] += 1
                break

ok = {m for m, r in replies.items() if heard(r) == "250"}
checks = [
    ("every 250 has exactly one downstream copy and a row", ok,
     lambda m: copies[m] == 1 and len(rows[m]) == 1),
    ("no downstream copy without a row", set(copies), lambda m: len(rows[m]) >= 1),
    ("no 451 4.3.0 with a PENDING row", {m for m, r in replies.items() if heard(r) == "451 4.3.0"},
     lambda m: "PENDING" not in rows[m]),
    ("no duplicate (copies or rows per Message-ID)", set(copies) | set(rows),
     lambda m: copies[m] <= 1 and len(rows[m]) <= 1),
]

failed = False
print()
print("%-55s %9s %11s  %s" % ("invariant", "checked", "violations", "result"))
examples = []
for name, subjects, holds in checks:
    bad = sorted(m for m in subjects if not holds(m))
    failed |= bool(bad)
    print("%-55s %9d %11d  %s" % (name, len(subjects), len(bad), "FAIL" if bad else "PASS"))
    for m in bad[:5]:
        r = replies.get(m)
        examples.append("  [%s] %s: heard %s, ledger rows %s, downstream copies %d" % (
            name, m, heard(r) if r else "nothing (not a soak message)", rows[m] or "none", copies[m]))
if examples:
    print("\nexamples of violations (at most 5 per invariant):")
    print("\n".join(examples))

print("\nreplies by code (%d messages):" % len(replies))
for code, n in collections.Counter(heard(r) for r in replies.values()).most_common():
    print("  %-22s %7d" % (code, n))
print("\nledger rows by status (%d rows):" % sum(len(v) for v in rows.values()))
for status, n in collections.Counter(s for v in rows.values() for s in v).most_common():
    print("  %-22s %7d" % (status, n))
print("\nrows of the messages answered 250, by status:")
for status, n in collections.Counter(s for m in ok for s in rows[m]).most_common():
    print("  %-22s %7d" % (status, n))
print("\ndownstream copies: %d of %d distinct messages" % (sum(copies.values()), len(copies)))
print("messages with a copy but no 250 (lost replies, 421/451 after the dot...): %d" % len(set(copies) - ok))
sys.exit(1 if failed else 0)
