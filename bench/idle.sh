#!/usr/bin/env bash
# Idle capacity: 1,000 SMTP connections held open against the gateway jar (embedded PostgreSQL, a sink
# downstream); prints the gateway's RSS and how fast a new client is served. Loopback only, bounded.
# Usage: bench/idle.sh [connections, default 1000]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-1000}
ulimit -n "$(ulimit -Hn)"   # 1,000 sockets on each side need more than the usual 1,024 descriptors
need_postfix_tools
build_jar
CP=$(bench_classpath)
work=$(mktemp -d /tmp/ledgerpost-idle.XXXX)
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody "127.0.0.1:$SINK" 1000 > /dev/null 2>&1 &
SINKPID=$!
trap 'kill ${GATEWAY_PID:-} $SINKPID 2>/dev/null || true' EXIT
start_gateway "$work" "$work/gateway.log" LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP \
  LEDGERPOST_DOWNSTREAM_PORT=$SINK LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONS=$((N + 100))
JPID=$GATEWAY_PID   # the subshell exec'd java, so its pid is the JVM's
rss() { awk '/VmRSS/{print int($2/1024)}' /proc/$JPID/status; }
echo "gateway RSS after start: $(rss) MB"
java -cp "$CP" dev.ledgerpost.bench.IdleCapacityBench "$LP" "$N" &
BENCH=$!
# sample the gateway's RSS while the connections are held
peak=0
while kill -0 $BENCH 2>/dev/null; do r=$(rss); (( r > peak )) && peak=$r; sleep 0.2; done
wait $BENCH
echo "gateway RSS peak with $N idle connections: $peak MB (VmHWM $(awk '/VmHWM/{print int($2/1024)}' /proc/$JPID/status) MB)"
