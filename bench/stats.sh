#!/usr/bin/env bash
# Usage statistics (issue 31, docs/design.md §8.12): a generated ledger (bench/stats-generate.sql, like
# PartitionMigrationTest's: ids spread evenly over the last year, in a year of weekly partitions), its roll-up built
# with V106's stats_roll_hour (as the STATS_ROLLUP job does, hour by hour), then the 30-day, per-day, per-user query
# timed: through the API (curl, what a client waits) and as the statement alone (bench/stats-query-user.sql, the
# gateway's own, PREPAREd and EXECUTEd), the median of RUNS runs each, with its EXPLAIN (ANALYZE, BUFFERS) saved.
# The gateway jar with its embedded PostgreSQL (default settings), loopback only; stops what it started by PID.
# Usage: bench/stats.sh [messages, default 100000000] [users, default 300] [runs, default 7]
# Writes bench/results/<date>-stats-<messages>.txt (what it prints) and -explain.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-100000000} USERS=${2:-300} RUNS=${3:-7}
CHUNK=1000000   # messages per generating statement (each its own transaction)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || true)
if [ -z "$PGBIN" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq postgresql-client >/dev/null
  PGBIN=$(dirname "$(command -v psql)")
fi
[ -f target/ledgerpost.jar ] || flock /tmp/ledgerpost-mvn.lock mvn -B -o -q -DskipTests package
work=$(mktemp -d /tmp/ledgerpost-stats.XXXX)
LP=$(free_port); HTTP=$(free_port); DOWN=$(free_port)   # nothing is relayed: the smarthost port stays closed
trap 'kill ${GATEWAY_PID:-} 2>/dev/null || true' EXIT
start_gateway "$work" "$work/gateway.log" LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP \
  LEDGERPOST_DOWNSTREAM_PORT=$DOWN LEDGERPOST_DOWNSTREAM_STARTTLS=none
PGPORT=$(grep -o 'localhost:[0-9]*/postgres' "$work/gateway.log" | head -1 | cut -d: -f2 | cut -d/ -f1)
PSQL="$PGBIN/psql -X -q -At -v ON_ERROR_STOP=1 -h localhost -p $PGPORT -U postgres -d postgres"
TOKEN=$(cat "$work/data/admin-token")
out=bench/results/$(date -u +%F)-stats-$N
label="$N messages"; [ "$N" -lt 100000000 ] && label="$N messages (SMOKE RUN: not the 100-million figure)"
exec > >(tee "$out.txt") 2>&1
echo "bench/stats.sh: $label, $USERS users, $RUNS runs, $(nproc) cores, $(date -u +%FT%TZ)"

# A year of weekly partitions, named and bounded as ledger.Partitions makes them (the gateway made this week and 4
# ahead). A new ledger's first partition, [MINVALUE, first week) from V90 (docs/data-model.md §5.12), is empty here and
# dropped first, so that the past year is weeks as a ledger a year old has them.
$PSQL -c "DO \$\$ DECLARE d date; n text; t text; BEGIN
  FOR t IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent IN ('messages'::regclass, 'recipients'::regclass) AND c.relname LIKE '%\\_before\\_%' LOOP
    EXECUTE format('DROP TABLE %I', t);
  END LOOP;
  FOR d IN SELECT generate_series(date_trunc('week', now() - interval '371 days'), now(), interval '7 days')::date LOOP
    n := to_char(d, '\"y\"IYYY\"w\"IW');
    IF to_regclass('messages_' || n) IS NULL THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF messages FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 80)',
        'messages_' || n, ledger_id_lowest(d), ledger_id_lowest(d + 7));
      EXECUTE format('CREATE TABLE %I PARTITION OF recipients FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 80)',
        'recipients_' || n, ledger_id_lowest(d), ledger_id_lowest(d + 7));
    END IF;
  END LOOP; END \$\$"
echo "partitions: $($PSQL -c "SELECT count(*) FROM pg_inherits WHERE inhparent = 'messages'::regclass")"

TO=$(($(date +%s) * 1000)); FROM=$((TO - 365 * 86400000))
t0=$SECONDS
for ((first = 1; first <= N; first += CHUNK)); do
  n=$(( N - first + 1 < CHUNK ? N - first + 1 : CHUNK ))
  $PSQL -v v_messages=$n -v v_first=$first -v v_total=$N -v v_from_ms=$FROM -v v_to_ms=$TO -v v_users=$USERS \
    -f bench/stats-generate.sql
done
$PSQL -c "VACUUM ANALYZE messages" -c "VACUUM ANALYZE recipients"
echo "generated: $($PSQL -c "SELECT count(*) FROM messages") messages, $($PSQL -c "SELECT count(*) FROM recipients") recipients in $((SECONDS - t0)) s"

# The roll-up of every closed hour, as the job would over its first passes.
t0=$SECONDS
$PSQL -c "SELECT count(stats_roll_hour(h)) FROM generate_series(date_trunc('hour', to_timestamp($FROM / 1000.0)),
           date_trunc('hour', now()) - interval '2 hours', interval '1 hour') AS h" >/dev/null
$PSQL -c "VACUUM ANALYZE stats_hours" -c "VACUUM ANALYZE stats_open" -c "VACUUM ANALYZE stats_rolled"
echo "roll-up: $($PSQL -c "SELECT count(*) FROM stats_rolled") hours, $($PSQL -c "SELECT count(*) FROM stats_hours") rows, $($PSQL -c "SELECT count(*) FROM stats_open") open ids, in $((SECONDS - t0)) s"

# The timing wants a quiet machine (the generation and roll-up above need not be): wait, at most an hour, for the
# 1-minute load average to fall below 0.5, and print it.
for ((i = 0; i < 720; i++)); do awk '{exit !($1 < 0.5)}' /proc/loadavg && break; sleep 5; done
echo "load average when timed: $(cut -d' ' -f1-3 /proc/loadavg)"

read -r SINCE UNTIL < <(python3 -c 'import datetime as d; u = d.datetime.now(d.timezone.utc).date() + d.timedelta(days=1)
print((u - d.timedelta(days=30)).isoformat() + "T00:00:00Z", u.isoformat() + "T00:00:00Z")')
URL="http://127.0.0.1:$HTTP/api/v1/stats?since=$SINCE&until=$UNTIL&bucket=1d&groupBy=user"
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
curl -sf -H "Authorization: Bearer $TOKEN" "$URL" > "$work/answer.json"   # a first run: plans and caches warm
api=$(for ((i = 0; i < RUNS; i++)); do
  curl -sf -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL"
done | awk '{printf "%.1f\n", $1 * 1000}' | median)
sqlms=$(for ((i = 0; i < RUNS; i++)); do
  { cat bench/stats-query-user.sql; echo "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE stats_user('$SINCE', '$UNTIL', NULL, 86400);"; } \
    | $PSQL -f - | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])'
done | median)
{ cat bench/stats-query-user.sql; echo "EXPLAIN (ANALYZE, BUFFERS) EXECUTE stats_user('$SINCE', '$UNTIL', NULL, 86400);"; } \
  | $PSQL -f - > "$out-explain.txt"
echo "query: 30 days ($SINCE .. $UNTIL), per day, per user: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$work/answer.json") rows"
echo "median of $RUNS: API (curl time_total) ${api} ms; statement alone (EXPLAIN ANALYZE execution time) ${sqlms} ms; bound 500 ms"
echo "plan: $out-explain.txt"
kill "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true
rm -rf "$work"
