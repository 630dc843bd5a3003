# Shared by the bench scripts: tools, the jar and the test classpath, free loopback ports, the gateway jar.
need_postfix_tools() {
  command -v smtp-source >/dev/null 2>&1 && command -v smtp-sink >/dev/null 2>&1 && return
  export DEBIAN_FRONTEND=noninteractive
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  apt-get update -qq >/dev/null && apt-get install -y -qq postfix >/dev/null
}
build_jar() { [ -f target/ledgerpost.jar ] || mvn -q -B -DskipTests package; }
bench_classpath() {
  mvn -q -B test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null
  echo "target/test-classes:target/classes:$(cat target/bench.classpath)"
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
# start_gateway WORKDIR LOGFILE [ENV=VALUE ...]: runs the jar in WORKDIR (its data/ goes there), waits until ready
start_gateway() {
  local dir=$1 log=$2; shift 2
  ( cd "$dir" && exec env "$@" java -jar "$OLDPWD/target/ledgerpost.jar" > "$log" 2>&1 ) &
  GATEWAY_PID=$!
  local deadline=$((SECONDS + 180))
  until grep -q "Ledgerpost ready" "$log"; do
    (( SECONDS < deadline )) && kill -0 "$GATEWAY_PID" 2>/dev/null || { echo "the gateway did not start"; tail -20 "$log"; exit 1; }
    sleep 1
  done
}

# An smtp-sink on $SINK counting into $work/sink.out (fresh each call), and what it has counted.
sink_start() {
  pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true
  : > "$work/sink.out"
  smtp-sink -u nobody -c "127.0.0.1:$SINK" 2000 > "$work/sink.out" 2>&1 &
  until (echo > /dev/tcp/127.0.0.1/$SINK) 2>/dev/null; do sleep 0.05; done
}
sink_count() { tr '\r' '\n' < "$work/sink.out" | { grep -o 'mesg=[0-9]*' || true; } | tail -1 | cut -d= -f2; }

# relay_rate PORT N SIZE SESSIONS -> messages per second, end to end (first sent .. last counted at the sink), or
# ERR(got/n) when the sink did not count them all within $RUN_LIMIT seconds.
relay_rate() {
  local port=$1 n=$2 size=$3 sessions=$4 t0 t1 got
  sink_start
  t0=$(date +%s.%N)
  timeout "$RUN_LIMIT" smtp-source -s "$sessions" -l "$size" -m "$n" -d -f bench@example.com -t sink@example.net \
    "127.0.0.1:$port" >/dev/null 2>&1 || true
  local until=$((SECONDS + RUN_LIMIT))
  while :; do
    got=$(sink_count); got=${got:-0}
    [ "$got" -ge "$n" ] && break
    (( SECONDS < until )) || break
    sleep 0.02
  done
  t1=$(date +%s.%N)
  [ "$got" -ge "$n" ] || { echo "ERR($got/$n)"; return; }
  python3 -c "print(f'{$n/($t1-$t0):.0f}')"
}
