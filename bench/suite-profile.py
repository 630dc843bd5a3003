#!/usr/bin/env python3
"""The test suite by class, from Surefire's reports: time per class (sorted), tests, the time outside the test
methods (class fixtures), and the slowest methods of the top classes.

  bench/suite-profile.py [target/surefire-reports] [top]

A class's time is its own JVM's wall time: with several test JVMs at once (pom.xml, test.forks) the sum is more
than the run's wall time, and a class that ran beside busy ones takes longer than it would alone.
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET

reports = sys.argv[1] if len(sys.argv) > 1 else "target/surefire-reports"
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
rows = []
for f in glob.glob(os.path.join(reports, "TEST-*.xml")):
    suite = ET.parse(f).getroot()
    cases = suite.findall("testcase")
    in_cases = sum(float(c.get("time") or 0) for c in cases)
    rows.append((float(suite.get("time")), suite.get("name"), int(suite.get("tests")), in_cases, cases))
rows.sort(key=lambda r: -r[0])
total = sum(r[0] for r in rows)
tests = sum(r[2] for r in rows)
print(f"{len(rows)} classes, {tests} tests, {total:.1f} s summed over classes")
print(f"{'s':>7} {'cum%':>5} {'tests':>5} {'fixture':>7}  class")
cum = 0.0
for t, name, n, in_cases, _ in rows:
    cum += t
    print(f"{t:7.1f} {100 * cum / total:5.1f} {n:5d} {t - in_cases:7.1f}  {name}")
print()
print(f"The slowest methods of the top {top} classes:")
for t, name, n, in_cases, cases in rows[:top]:
    print(f"{t:7.1f}  {name}")
    for c in sorted(cases, key=lambda c: -float(c.get("time") or 0))[:4]:
        print(f"          {float(c.get('time') or 0):6.1f}  {c.get('name')[:100]}")
