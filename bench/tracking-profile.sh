#!/usr/bin/env bash
# Where tracking's PostgreSQL cost goes, statement by statement (issue 30, docs/design.md §8.13): no timing, counts.
# One gateway on its embedded PostgreSQL with pg_stat_statements loaded (ALTER SYSTEM, then a restart of the gateway),
# relaying to its own Postfix (bench/lib.sh's postfix_instance, logging to a maillog_file) that relays to an smtp-sink;
# the gateway follows that log (tracking.postfixLog). A warm-up, then the statistics are reset and the measured load
# is sent in steps (STEP messages every second, bounded), so that the rows issued per second, which decide how many
# rows a queue-id lookup reads, are the same from one build to the next on a busy machine. Once Postfix's queue is empty
# and every measured row has its delivered fact, it waits WAIT_NEWS seconds more (the age gauge's reads) and prints, per
# statement: calls, rows, shared buffers hit+read, WAL bytes per message, and calls per message; then the tracking
# statements' sum and the relay's. Times (total_exec_time) are printed but mean little on a shared machine.
# Usage: bench/tracking-profile.sh [messages, default 3000] [per step, default 100] [warm-up, default 1000]
# Needs root (Postfix and smtp-sink). Loopback only. Writes nothing under bench/results: copy what it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-3000}
STEP=${2:-100}
WARM=${3:-1000}
WAIT_NEWS=${WAIT_NEWS:-12}
SIZE=2048
RUN_LIMIT=300
need_postfix_tools
build_jar
work=$(mktemp -d /tmp/ledgerpost-tracking-profile.XXXX)
chmod 755 "$work"
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port); PF=$(free_port)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || true)
smtp-sink -u nobody -c "127.0.0.1:$SINK" 5000 > /dev/null 2>&1 &
SINKPID=$!
postfix_instance "$work/postfix" "$PF" "$SINK" "$work/postfix/maillog" > "$work/postfix.log" 2>&1 &
PFPID=$!
trap 'kill ${GATEWAY_PID:-} $SINKPID 2>/dev/null || true; postfix -c "$work/postfix/conf" stop >/dev/null 2>&1 || true' EXIT
deadline=$((SECONDS + 60))
until (echo > /dev/tcp/127.0.0.1/$PF) 2>/dev/null; do
  (( SECONDS < deadline )) || { echo "Postfix did not start"; cat "$work/postfix.log"; exit 1; }
  sleep 0.5
done
mkdir -p "$work/lp"
gateway() {
  start_gateway "$work/lp" "$work/gateway.log" LEDGERPOST_SMTP_PORT="$LP" LEDGERPOST_HTTP_PORT="$HTTP" \
    LEDGERPOST_DOWNSTREAM_PORT="$PF" LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONSPERADDRESS=2000 \
    LEDGERPOST_TRACKING_POSTFIXLOG="$work/postfix/maillog"
  local pgport
  pgport=$(grep -o 'localhost:[0-9]*/postgres' "$work/gateway.log" | tail -1 | cut -d: -f2 | cut -d/ -f1)
  PSQL="$PGBIN/psql -X -q -At -h localhost -p $pgport -U postgres"
}
gateway
$PSQL -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" -c "ALTER SYSTEM SET pg_stat_statements.max = 1000" >/dev/null
kill -TERM "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true
mv "$work/gateway.log" "$work/gateway-first.log"
gateway
$PSQL -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null

# load M: M messages, STEP of them started every second (each step's smtp-source waited for; a late step starts at once).
load() {
  local m=$1 sent=0 t0=$SECONDS k
  while [ "$sent" -lt "$m" ]; do
    k=$(( m - sent < STEP ? m - sent : STEP ))
    timeout 60 smtp-source -s 10 -l "$SIZE" -m "$k" -d -f bench@example.com -t sink@example.net "127.0.0.1:$LP" >/dev/null 2>&1 || true
    sent=$((sent + k))
    while [ $(( SECONDS - t0 )) -lt $(( sent / STEP )) ]; do sleep 0.05; done
  done
}
# settled M: the newest M rows all have their delivered fact (within RUN_LIMIT).
settled() {
  local until=$((SECONDS + RUN_LIMIT))
  until [ "$($PSQL -c "SELECT count(*) FROM (SELECT id FROM messages ORDER BY id DESC LIMIT $1) m
             WHERE NOT EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = m.id AND f.state = 'delivered')")" -eq 0 ]; do
    (( SECONDS < until )) || { echo "warning: facts did not catch up" >&2; return; }
    sleep 0.5
  done
}
echo "warm-up: $WARM messages" >&2
load "$WARM"; postfix_drain "$work/postfix"; settled "$WARM"
$PSQL -c "VACUUM (ANALYZE)" -c "CHECKPOINT" >/dev/null
$PSQL -c "SELECT pg_stat_statements_reset()" >/dev/null
rows0=$($PSQL -c "SELECT count(*) FROM messages")
t0=$(date +%s.%N)
echo "measured: $N messages, $STEP a second" >&2
load "$N"
t1=$(date +%s.%N)
postfix_drain "$work/postfix"; settled "$N"
sleep "$WAIT_NEWS"
rows1=$($PSQL -c "SELECT count(*) FROM messages")
n=$((rows1 - rows0))
printf "tracking statements profile  %s  %s messages (%s sent at %s/s, achieved %s/s) after a warm-up of %s; commit %s\n" \
  "$(date -u +%FT%TZ)" "$n" "$N" "$STEP" "$(python3 -c "print(f'{$N/($t1-$t0):.0f}')")" "$WARM" "$(git rev-parse --short HEAD)"
$PSQL -F ' | ' <<SQL
SELECT 'calls/msg', 'rows/msg', 'blks/msg', 'wal_B/msg', 'ms_total', 'statement';
WITH s AS (
  SELECT calls, rows, shared_blks_hit + shared_blks_read AS blks, wal_bytes, total_exec_time, query,
         query ~* '(delivery_facts|tracking_|queued as)' AS tracking
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND query NOT LIKE '%ORDER BY id DESC LIMIT \$1) m%')  -- this script's own wait for the facts
SELECT round(calls::numeric / $n, 3), round(rows::numeric / $n, 2), round(blks::numeric / $n, 1), round(wal_bytes / $n, 0),
       round(total_exec_time::numeric, 0), CASE WHEN tracking THEN 'T ' ELSE '  ' END || left(regexp_replace(query, '\s+', ' ', 'g'), 150)
  FROM s WHERE calls > 0 ORDER BY tracking DESC, blks DESC LIMIT 60;
SELECT 'sum', CASE WHEN tracking THEN 'tracking' ELSE 'other' END, round(sum(calls)::numeric / $n, 3), round(sum(rows)::numeric / $n, 2),
       round(sum(blks)::numeric / $n, 1), round(sum(wal_bytes) / $n, 0), round(sum(total_exec_time)::numeric, 0)
  FROM (SELECT calls, rows, shared_blks_hit + shared_blks_read AS blks, wal_bytes, total_exec_time,
               query ~* '(delivery_facts|tracking_|queued as)' AS tracking FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND query NOT LIKE '%ORDER BY id DESC LIMIT \$1) m%') s GROUP BY tracking ORDER BY tracking DESC;
SELECT 'facts', count(*) FILTER (WHERE state = 'delivered'), 'mappings', (SELECT count(*) FROM tracking_queue_ids),
       'avg evidence B', round(avg(octet_length(evidence))), 'avg outbox payload B',
       (SELECT round(avg(octet_length(payload::text))) FROM outbox WHERE type LIKE 'recipient.%')
  FROM delivery_facts;
SQL
