#!/usr/bin/env python3
"""Writes the order the test classes start in: slowest first, from a run's Surefire reports.

  bench/suite-order.py [target/surefire-reports]

Several test JVMs take classes from one queue (pom.xml, test.forks). In the file system's order a long class could
start last and run on alone while the other JVMs idle: one class started late was 20 to 60 s of a run's wall time,
and the order changed from one machine to the next. Surefire's runOrder=balanced starts the slowest first when it
knows the times; it reads them from .surefire-ledgerpost (and, for the "alone" execution, .surefire-ledgerpost-alone)
beside pom.xml, which the build copies from src/test/run-order/ (Surefire rewrites the copies after each run, so the
committed files stay as written here).

Format (Surefire's RunEntryStatisticsMap): one line per class, "<runs>,<milliseconds>,<class>". Surefire ranks by
the milliseconds and breaks ties in hash order, so the values are made unique. A class missing from the file starts
after all the others: run this again when a slow class is added.
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET

reports = sys.argv[1] if len(sys.argv) > 1 else "target/surefire-reports"
# One copy per Surefire execution (pom.xml): each execution rewrites its own with only the classes it ran.
outs = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "run-order", name)
        for name in (".surefire-ledgerpost", ".surefire-ledgerpost-alone")]
times = {}
for f in glob.glob(os.path.join(reports, "TEST-*.xml")):
    suite = ET.parse(f).getroot()
    name = suite.get("name")
    if "$" in name:  # a nested class runs inside its outer class
        continue
    times[name] = max(times.get(name, 0), int(float(suite.get("time")) * 1000))
lines, previous = [], None
for name, ms in sorted(times.items(), key=lambda kv: (-kv[1], kv[0])):
    if previous is not None and ms >= previous:
        ms = previous - 1
    ms = max(ms, 1)
    lines.append(f"1,{ms},{name}")
    previous = ms
for out in outs:
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{os.path.normpath(out)}: {len(lines)} classes, slowest {lines[0] if lines else '-'}")
