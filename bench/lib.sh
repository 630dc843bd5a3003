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
