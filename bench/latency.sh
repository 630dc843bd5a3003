#!/usr/bin/env bash
# Reply latency the gateway adds at a fixed offered rate (default 350 msg/s, about half the 2 KB /
# 20 session maximum measured by bench/relay.sh): the same paced client against smtp-sink directly
# and through the gateway jar. Loopback only, bounded.
# Usage: bench/latency.sh [rate, default 350] [messages, default 5000]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RATE=${1:-350}
N=${2:-5000}
need_postfix_tools
build_jar
CP=$(bench_classpath)
work=$(mktemp -d /tmp/ledgerpost-latency.XXXX)
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody "127.0.0.1:$SINK" 1000 > /dev/null 2>&1 &
SINKPID=$!
trap 'kill ${GATEWAY_PID:-} $SINKPID 2>/dev/null || true' EXIT
start_gateway "$work" "$work/gateway.log" LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP \
  LEDGERPOST_DOWNSTREAM_PORT=$SINK LEDGERPOST_DOWNSTREAM_STARTTLS=none
bench() { java -cp "$CP" dev.ledgerpost.bench.LatencyAtRateBench "$@" 2>&1 | grep -v "^[0-9]\{4\}-"; }
bench "$LP" "$RATE" 20 20000 >/dev/null   # warm-up: a warm JVM, as the gateway is after its first minutes
echo "direct:  $(bench "$SINK" "$RATE" 20 "$N")"
echo "gateway: $(bench "$LP" "$RATE" 20 "$N")"
