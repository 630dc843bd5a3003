#!/usr/bin/env bash
# The k6 scenarios with the Java load driver, against a gateway it starts on loopback. Bounded.
# Usage: bench/load.sh smtp-send|lock-contention|ws-watchers|http-send|http-lock-contention [messages] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null
export LEDGERPOST_TEST_PG=${LEDGERPOST_TEST_PG:-embedded}
java -Xmx1g -cp "target/test-classes:target/classes:$(cat target/bench.classpath)" \
  dev.ledgerpost.load.LoadDriver "$@" 2>&1 | grep --line-buffered -vE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T"
