#!/usr/bin/env bash
# Writes src/test/child-jvm/classes.lst.gz, the classes a child gateway's start loads, from which every test run makes
# the child gateways' class-data archive as its first class starts (testing.ChildJvm). Run it when the gateway's start
# changed much (new libraries, a new part): an out-of-date list is not wrong, it only archives fewer classes.
#
# How: with no list in the tree, the first child of a run records the classes it loads (-XX:DumpLoadedClassList) until
# it exits. Two runs, one child on a server of the tests and one on its own embedded PostgreSQL, are merged in order.
set -euo pipefail
cd "$(dirname "$0")/.."
list=src/test/child-jvm/classes.lst.gz
saved=$(mktemp)
[ -f "$list" ] && mv "$list" "$saved"
trap '[ -s "$saved" ] && [ ! -f "$list" ] && mv "$saved" "$list"; rm -f "$saved"' EXIT
merged=$(mktemp)
for test in CredentialReloadTest EmbeddedRestartTest; do
  rm -rf target/child-jvm
  mvn -B -q test -Dtest="$test" -Dtest.forks=1 -Dsurefire.failIfNoSpecifiedTests=false
  grep -v '^#' target/child-jvm/classes.lst >> "$merged"
done
awk '!seen[$0]++' "$merged" | gzip -9n > "$list"
rm -f "$merged"
echo "$list: $(zcat "$list" | wc -l) classes and lambda forms"
