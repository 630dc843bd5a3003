#!/usr/bin/env bash
# SMTP throughput while a webhook receiver answers, and while it hangs every request. Loopback only, bounded.
# Usage: bench/webhook-impact.sh [messages per run] [sessions] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null
export LEDGERPOST_TEST_PG=${LEDGERPOST_TEST_PG:-embedded}
exec java -Xmx1g -cp "target/test-classes:target/classes:$(cat target/bench.classpath)" \
  dev.ledgerpost.bench.WebhookImpactBench "$@" 2>&1 | grep --line-buffered -vE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T"
