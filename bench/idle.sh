#!/usr/bin/env bash
# Idle capacity: 1,000 SMTP connections held open against the gateway jar (embedded PostgreSQL, a sink
# downstream); prints the gateway's RSS and how fast a new client is served. Loopback only, bounded.
# Usage: bench/idle.sh [connections, default 1000]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
ulimit -n "$(ulimit -Hn)"   # 1,000 sockets on each side need more than the usual 1,024 descriptors
command -v smtp-sink >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null; apt-get install -y -qq postfix >/dev/null; }
[ -f target/ledgerpost.jar ] || mvn -q -B -DskipTests package
mvn -q -B test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null
work=$(mktemp -d /tmp/ledgerpost-idle.XXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody "127.0.0.1:$SINK" 1000 > /dev/null 2>&1 &
SINKPID=$!
( cd "$work" && LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP LEDGERPOST_DOWNSTREAM_PORT=$SINK \
  LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONS=$((N + 100)) \
  exec java -jar "$OLDPWD/target/ledgerpost.jar" > "$work/gateway.log" 2>&1 ) &
GW=$!
trap 'kill $GW $SINKPID 2>/dev/null || true' EXIT
deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/gateway.log"; do (( SECONDS < deadline )) || { tail "$work/gateway.log"; exit 1; }; sleep 1; done
JPID=$(pgrep -f "$work" -n || true)
JPID=$(pgrep -f "ledgerpost.jar" | while read -r p; do [ "$(readlink /proc/$p/cwd)" = "$work" ] && echo "$p"; done | head -1)
rss() { awk '/VmRSS/{print int($2/1024)}' /proc/$JPID/status; }
echo "gateway RSS after start: $(rss) MB"
java -cp "target/test-classes:target/classes:$(cat target/bench.classpath)" dev.ledgerpost.bench.IdleCapacityBench "$LP" "$N" &
BENCH=$!
# sample the gateway's RSS while the connections are held
peak=0
while kill -0 $BENCH 2>/dev/null; do r=$(rss); (( r > peak )) && peak=$r; sleep 0.2; done
wait $BENCH
echo "gateway RSS peak with $N idle connections: $peak MB (VmHWM $(awk '/VmHWM/{print int($2/1024)}' /proc/$JPID/status) MB)"
