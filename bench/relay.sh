#!/usr/bin/env bash
# Side-by-side relay benchmark on loopback (issue: "Benchmark against Postfix and the ledger's own ceiling").
# For each message size and session count, with the same smtp-source load and smtp-sink downstream:
#   1 direct     smtp-source -> smtp-sink                       (protocol ceiling)
#   2 postfix    smtp-source -> Postfix relay (durable queue) -> smtp-sink
#   3 ledgerpost smtp-source -> Ledgerpost (embedded PostgreSQL, fsync and synchronous_commit on) -> smtp-sink
#   4 pgbench    the ledger's own open+settle transactions (bench/ledger-ceiling.sql), same concurrency
# End-to-end rate = messages / (first message sent .. last message counted by the sink).
# Usage: bench/relay.sh [messages for 2KB, default 5000] [messages for 64KB, default 1000]
# Needs root (smtp-sink drops to nobody; Postfix runs its own instance under a temp directory).
set -euo pipefail
cd "$(dirname "$0")/.."
N_SMALL=${1:-5000}
N_LARGE=${2:-1000}
RUN_LIMIT=300   # seconds any single run may take

need() { command -v "$1" >/dev/null 2>&1; }
if ! need smtp-source || ! need postfix; then
  export DEBIAN_FRONTEND=noninteractive
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  apt-get update -qq >/dev/null && apt-get install -y -qq postfix >/dev/null
fi
PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -1 || true)
if [ -z "$PGBENCH" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null
  PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench | tail -1)
fi
[ -f target/ledgerpost.jar ] || mvn -q -B -DskipTests package

work=$(mktemp -d /tmp/ledgerpost-bench.XXXX)
chmod 755 "$work"   # Postfix daemons run as user postfix and must reach their directories
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
SINK=$(free_port); PF=$(free_port); LP=$(free_port); LPHTTP=$(free_port)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  postfix -c "$work/postfix/conf" stop >/dev/null 2>&1 || true
  pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true
}
trap cleanup EXIT

# --- Postfix: its own instance, default settings but for loopback and the relayhost.
mkdir -p "$work/postfix/conf" "$work/postfix/queue" "$work/postfix/data"
cp /etc/postfix/master.cf "$work/postfix/conf/master.cf"
sed -i "s/^smtp      inet  n       -       y       -       -       smtpd/127.0.0.1:$PF inet n - n - - smtpd/" "$work/postfix/conf/master.cf"
cat > "$work/postfix/conf/main.cf" <<EOC
compatibility_level = 3.6
queue_directory = $work/postfix/queue
data_directory = $work/postfix/data
myhostname = postfix.bench.local
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:$SINK
maillog_file = /dev/stdout
smtputf8_enable = no
EOC
chown postfix "$work/postfix/data"
# Postfix only starts a non-default configuration that its default main.cf lists.
[ -f /etc/postfix/main.cf ] || printf 'compatibility_level = 3.6\ninet_interfaces = loopback-only\n' > /etc/postfix/main.cf
current=$(postconf -h alternate_config_directories 2>/dev/null || true)
postconf -e "alternate_config_directories = ${current:+$current, }$work/postfix/conf"
postfix -c "$work/postfix/conf" start-fg > "$work/postfix.log" 2>&1 &
pids+=($!)

# --- Ledgerpost on its embedded PostgreSQL, default durability.
mkdir -p "$work/lp"
( cd "$work/lp" && LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$LPHTTP LEDGERPOST_DOWNSTREAM_PORT=$SINK \
  LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONS=2000 \
  exec java -jar "$OLDPWD/target/ledgerpost.jar" > "$work/ledgerpost.log" 2>&1 ) &
LPPID=$!
pids+=($LPPID)
deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/ledgerpost.log"; do
  (( SECONDS < deadline )) || { echo "Ledgerpost did not start"; tail -20 "$work/ledgerpost.log"; exit 1; }
  sleep 1
done
until (echo > /dev/tcp/127.0.0.1/$PF) 2>/dev/null; do (( SECONDS < deadline )) || { echo "Postfix did not start"; cat "$work/postfix.log"; exit 1; }; sleep 0.5; done
PGPORT=$(grep -o 'localhost:[0-9]*/postgres' "$work/ledgerpost.log" | head -1 | cut -d: -f2 | cut -d/ -f1)
JPID=$(pgrep -f "ledgerpost.jar" | head -1)

sink_start() {
  pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true
  : > "$work/sink.out"
  smtp-sink -u nobody -c "127.0.0.1:$SINK" 2000 > "$work/sink.out" 2>&1 &
  until (echo > /dev/tcp/127.0.0.1/$SINK) 2>/dev/null; do sleep 0.05; done
}
sink_count() { tr '\r' '\n' < "$work/sink.out" | { grep -o 'mesg=[0-9]*' || true; } | tail -1 | cut -d= -f2; }

# run PORT N SIZE SESSIONS -> messages per second, end to end
run() {
  local port=$1 n=$2 size=$3 sessions=$4
  sink_start
  local t0 t1 got
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

scrape() { curl -s "http://127.0.0.1:$LPHTTP/metrics" | { grep '^ledgerpost_smtp_reply_seconds_bucket{stage="data"' || true; }; }
quantiles() { # before-file after-file -> "p50 p99" in ms from the histogram deltas
  python3 - "$1" "$2" <<'PY'
import re, sys
def load(p):
    d = {}
    for line in open(p):
        m = re.search(r'le="([^"]+)"\} ([0-9.eE+]+)', line)
        if m:
            d[float('inf') if m.group(1) == '+Inf' else float(m.group(1))] = float(m.group(2))
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
les = sorted(b)
cum = [(le, b[le] - a.get(le, 0)) for le in les]
total = cum[-1][1] if cum else 0
def q(p):
    for le, c in cum:
        if total and c >= p * total:
            return le * 1000
    return float('nan')
print(f"{q(0.5):.1f} {q(0.99):.1f}")
PY
}
pgbench_ceiling() { # sessions -> transactions (messages) per second
  local c=$1 n=$2
  PGPASSWORD= "$PGBENCH" -h localhost -p "$PGPORT" -U postgres -n -M prepared -c "$c" -j 2 -t $(( n / c )) \
    -f bench/ledger-ceiling.sql postgres 2>/dev/null | { grep -E "^tps" || true; } | grep -oE '[0-9]+\.[0-9]+' | head -1 | cut -d. -f1 || true
}

warm() { run "$LP" 2000 2048 20 >/dev/null; run "$PF" 500 2048 20 >/dev/null; }
echo "warming up..."; warm

printf "\nLedgerpost relay benchmark  %s  (%s cores, %s)\n" "$(date -u +%FT%TZ)" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf "%-6s %-8s %-7s %9s %9s %11s %9s %9s %9s %9s %9s\n" size sessions msgs "direct" postfix ledgerpost pgbench "lp/pf" "lp/pgb" "p50_ms" "p99_ms"
for size in 2048 65536; do
  for sessions in 20 100; do
    n=$N_SMALL; [ "$size" -gt 2048 ] && n=$N_LARGE
    direct=$(run "$SINK" "$n" "$size" "$sessions")
    postfix_rate=$(run "$PF" "$n" "$size" "$sessions")
    scrape > "$work/before"
    lp=$(run "$LP" "$n" "$size" "$sessions")
    scrape > "$work/after"
    read -r p50 p99 < <(quantiles "$work/before" "$work/after")
    pgb=$(pgbench_ceiling "$sessions" "$n")
    ratio() { python3 -c "a,b='$1','$2'; print(f'{float(a)/float(b):.2f}' if a.isdigit() and b.isdigit() and int(b) else '-')"; }
    printf "%-6s %-8s %-7s %9s %9s %11s %9s %9s %9s %9s %9s\n" "$size" "$sessions" "$n" "$direct" "$postfix_rate" "$lp" "$pgb" \
      "$(ratio "$lp" "$postfix_rate")" "$(ratio "$lp" "$pgb")" "$p50" "$p99"
  done
done
lp_rss=$(grep VmHWM /proc/$JPID/status | awk '{print $2}')
pf_rss=$(for p in $(pgrep -f "$work/postfix" ; pgrep -u postfix); do grep VmHWM /proc/$p/status 2>/dev/null | awk '{print $2}'; done | awk '{s+=$1} END {print s}')
printf "\npeak RSS: ledgerpost %d MB (JVM, one process); postfix %d MB (sum of its processes' peaks)\n" $((lp_rss / 1024)) $((${pf_rss:-0} / 1024))
printf "rates are messages/s end to end; p50/p99 = Ledgerpost's reply latency after the final dot, from its histogram\n"
