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

# The load relay_rate sends unless RELAY_CLIENT names another function with the same arguments (PORT N SIZE SESSIONS).
smtp_source_client() {
  timeout "$RUN_LIMIT" smtp-source -s "$4" -l "$3" -m "$2" -d -f bench@example.com -t sink@example.net \
    "127.0.0.1:$1" >/dev/null 2>&1 || true
}
# relay_rate PORT N SIZE SESSIONS -> messages per second, end to end (first sent .. last counted at the sink), or
# ERR(got/n) when the sink did not count them all within $RUN_LIMIT seconds.
relay_rate() {
  local port=$1 n=$2 size=$3 sessions=$4 t0 t1 got
  sink_start
  t0=$(date +%s.%N)
  ${RELAY_CLIENT:-smtp_source_client} "$port" "$n" "$size" "$sessions"
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

# postfix_instance DIR PORT NEXT LOG: a Postfix of its own in DIR, in the foreground (run it in the background), default
# settings but for loopback, smtpd on PORT and relayhost 127.0.0.1:NEXT; its log (maillog_file) goes to LOG, /dev/stdout
# or a file in DIR. DIR's parent must be reachable by the user postfix. `postfix -c DIR/conf stop` stops it.
postfix_instance() {
  local dir=$1 port=$2 next=$3 log=$4 current
  mkdir -p "$dir/conf" "$dir/queue" "$dir/data"
  cp /etc/postfix/master.cf "$dir/conf/master.cf"
  sed -i "s/^smtp      inet  n       -       y       -       -       smtpd/127.0.0.1:$port inet n - n - - smtpd/" "$dir/conf/master.cf"
  cat > "$dir/conf/main.cf" <<EOC
compatibility_level = 3.6
queue_directory = $dir/queue
data_directory = $dir/data
myhostname = postfix.bench.local
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:$next
maillog_file = $log
maillog_file_prefixes = /dev/stdout, $dir
smtputf8_enable = no
EOC
  chown postfix "$dir/data"
  # Postfix only starts a non-default configuration that its default main.cf lists.
  [ -f /etc/postfix/main.cf ] || printf 'compatibility_level = 3.6\ninet_interfaces = loopback-only\n' > /etc/postfix/main.cf
  current=$(postconf -h alternate_config_directories 2>/dev/null || true)
  postconf -e "alternate_config_directories = ${current:+$current, }$dir/conf"
  exec postfix -c "$dir/conf" start-fg
}
# postfix_drain DIR: Postfix may still be delivering (or retrying) when a run has counted its n at the sink: wait until
# its queue is empty, so that nothing of it reaches the sink, or takes CPU, during the next run.
postfix_drain() {
  local until=$((SECONDS + 120))
  while (( SECONDS < until )); do
    postqueue -c "$1/conf" -p 2>/dev/null | grep -q "Mail queue is empty" && return
    postqueue -c "$1/conf" -f >/dev/null 2>&1 || true
    sleep 0.5
  done
  echo "warning: Postfix's queue did not drain within 120 s" >&2
}

# A feature's cost, two gateways side by side (bench/resubmission.sh, bench/quota.sh): for each mode M, JPID[M] is its
# JVM's pid, PGPID[M] its PostgreSQL's postmaster and PSQL[M] a psql to it. CPU in clock ticks (100 per second).
ticks_jvm() { awk '{print $14 + $15}' "/proc/${JPID[$1]}/stat"; }
ticks_pg() {
  local pid=${PGPID[$1]} t
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat")
  for c in $(pgrep -P "$pid"); do t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
lsn() { ${PSQL[$1]} -c "SELECT pg_current_wal_lsn()"; }
wal_bytes() { ${PSQL[$1]} -c "SELECT coalesce(sum(record_size + fpi_size), 0) FROM pg_get_wal_stats('$2', '$3', true)"; }

# cost_setup NAME: the work directory ($work, /tmp/ledgerpost-NAME.XXXX), the sink's port ($SINK) and an EXIT trap that
# stops the gateways cost_gateway started and the sink.
cost_setup() {
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || true)
  work=$(mktemp -d "/tmp/ledgerpost-$1.XXXX")
  chmod 755 "$work"
  SINK=$(free_port)
  pids=()
  declare -gA PORT JPID PGPID PSQL
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true' EXIT
}
# cost_gateway MODE [ENV=VALUE ...]: one of the gateways side by side, on its own embedded PostgreSQL, relaying to $SINK
# without TLS, with the settings given; sets PORT, JPID, PGPID and PSQL of MODE.
cost_gateway() {
  local mode=$1 pgport; shift
  mkdir -p "$work/$mode"
  PORT[$mode]=$(free_port)
  start_gateway "$work/$mode" "$work/$mode.log" LEDGERPOST_SMTP_PORT="${PORT[$mode]}" LEDGERPOST_HTTP_PORT="$(free_port)" \
    LEDGERPOST_DOWNSTREAM_PORT="$SINK" LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONS=2000 \
    LEDGERPOST_SMTP_MAXCONNECTIONSPERADDRESS=2000 "$@"
  pids+=("$GATEWAY_PID")
  JPID[$mode]=$GATEWAY_PID
  PGPID[$mode]=$(head -1 "$work/$mode/data/pg/postmaster.pid")
  pgport=$(grep -o 'localhost:[0-9]*/postgres' "$work/$mode.log" | head -1 | cut -d: -f2 | cut -d/ -f1)
  PSQL[$mode]="$PGBIN/psql -X -q -At -h localhost -p $pgport -U postgres"
  ${PSQL[$mode]} -c "CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null
}

# cost_rounds OUT ROUNDS N A B: ROUNDS rounds of both modes, A first in odd rounds and B first in even ones (ABBA), so
# neither always runs on the warmer machine; each run starts after a VACUUM (ANALYZE) and a CHECKPOINT of its ledger,
# so no checkpoint or autovacuum of an earlier run's rows falls into it. The caller defines run MODE N (the rate) and
# feature MODE (its count of what the feature did: the last column), and may define after_run MODE N, called after
# each run before its CPU is read (to wait for the work the run left behind). A run whose N messages are not all in its ledger
# is marked ERR: a rate counted from anything else is no rate. Appends one row per run to OUT.
cost_rounds() {
  local out=$1 rounds=$2 n=$3 a=$4 b=$5 r mode order rate rows0 rows1 c0 c1 l0 l1 j0 j1 p0 p1 wal
  for r in $(seq 1 "$rounds"); do
    order="$a $b"; [ $((r % 2)) -eq 0 ] && order="$b $a"
    for mode in $order; do
      ${PSQL[$mode]} -c "VACUUM (ANALYZE)" -c "CHECKPOINT" >/dev/null
      rows0=$(${PSQL[$mode]} -c "SELECT count(*) FROM messages"); c0=$(feature "$mode"); l0=$(lsn "$mode")
      j0=$(ticks_jvm "$mode"); p0=$(ticks_pg "$mode")
      rate=$(run "$mode" "$n")
      ! declare -F after_run >/dev/null || after_run "$mode" "$n"
      j1=$(ticks_jvm "$mode"); p1=$(ticks_pg "$mode"); l1=$(lsn "$mode")
      rows1=$(${PSQL[$mode]} -c "SELECT count(*) FROM messages"); c1=$(feature "$mode")
      [ $((rows1 - rows0)) -eq "$n" ] || rate="ERR(ledger:$((rows1 - rows0)))"
      wal=$(wal_bytes "$mode" "$l0" "$l1")
      printf "%-6s %-6s %8s %8.3f %8.3f %8d %8d\n" "$r" "$mode" "$rate" "$(awk "BEGIN {print ($j1 - $j0) * 10 / $n}")" \
        "$(awk "BEGIN {print ($p1 - $p0) * 10 / $n}")" "$((wal / n))" "$((c1 - c0))" | tee -a "$out"
    done
  done
}

# cost_summary FILE A B: from FILE's rows "round mode msg_s jvm_ms pg_ms wal_B ..." after its last header line (the
# run just made; earlier runs kept above it are not mixed in), the median rate of each mode, each
# round's A/B ratio (A's run beside B's in the same round: a drift of the machine falls on both of a pair) and their
# median, and the median CPU-ms and WAL bytes per message of each.
cost_summary() {
  python3 - "$@" <<'PY'
import statistics, sys
path, a, b = sys.argv[1:4]
rows = []
for l in open(path):  # the last run's rows only: a results file keeps the runs before it above
    if l.startswith("round"):
        rows = []
    elif l[:1].isdigit():
        rows.append(l.split())
def med(mode, col):
    vals = [float(r[col]) for r in rows if r[1] == mode and not r[2].startswith("ERR")]
    return statistics.median(vals) if vals else float("nan")
by = {(r[0], r[1]): r[2] for r in rows}
pairs = [(float(by[(n, a)]), float(by[(n, b)])) for n in sorted({r[0] for r in rows}, key=int)
         if (n, a) in by and (n, b) in by and not by[(n, a)].startswith("ERR") and not by[(n, b)].startswith("ERR")]
ratios = sorted(x / y for x, y in pairs)
paired = statistics.median(ratios) if ratios else float("nan")
print(f"median rate: {a} {med(a, 2):.0f}/s, {b} {med(b, 2):.0f}/s; per round {a}/{b} {', '.join(f'{r:.3f}' for r in ratios)}; "
      f"median of the rounds' ratios {paired:.3f} (cost {100 * (1 - paired):.1f} %)")
print(f"median CPU-ms per message: JVM {a} {med(a, 3):.3f} {b} {med(b, 3):.3f}; "
      f"PostgreSQL {a} {med(a, 4):.3f} {b} {med(b, 4):.3f}; WAL bytes {a} {med(a, 5):.0f} {b} {med(b, 5):.0f}")
PY
}
