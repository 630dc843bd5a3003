#!/usr/bin/env bash
# Reply latency the gateway adds at a fixed offered rate (default 350 msg/s, about half the 2 KB /
# 20 session maximum measured by bench/relay.sh): the same paced client against smtp-sink directly
# and through the gateway jar. Loopback only, bounded.
# Usage: bench/latency.sh [rate, default 350] [messages, default 5000]
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-350}
N=${2:-5000}
command -v smtp-sink >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null; apt-get install -y -qq postfix >/dev/null; }
[ -f target/ledgerpost.jar ] || mvn -q -B -DskipTests package
mvn -q -B test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null
CP="target/test-classes:target/classes:$(cat target/bench.classpath)"
work=$(mktemp -d /tmp/ledgerpost-latency.XXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody "127.0.0.1:$SINK" 1000 > /dev/null 2>&1 &
SINKPID=$!
( cd "$work" && LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP LEDGERPOST_DOWNSTREAM_PORT=$SINK \
  LEDGERPOST_DOWNSTREAM_STARTTLS=none exec java -jar "$OLDPWD/target/ledgerpost.jar" > "$work/gateway.log" 2>&1 ) &
GW=$!
trap 'kill $GW $SINKPID 2>/dev/null || true' EXIT
deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/gateway.log"; do (( SECONDS < deadline )) || { tail "$work/gateway.log"; exit 1; }; sleep 1; done
bench() { java -cp "$CP" dev.ledgerpost.bench.LatencyAtRateBench "$@" 2>&1 | grep -v "^[0-9]\{4\}-"; }
bench "$LP" "$RATE" 20 2000 >/dev/null   # warm-up
echo "direct:  $(bench "$SINK" "$RATE" 20 "$N")"
echo "gateway: $(bench "$LP" "$RATE" 20 "$N")"
