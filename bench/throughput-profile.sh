#!/usr/bin/env bash
# Where a relayed message's cost goes, in counts rather than timings (issue 33): one gateway on its embedded
# PostgreSQL with pg_stat_statements and pg_walinspect (loaded as bench/tracking-profile.sh does: ALTER SYSTEM, then a
# restart of the gateway), relaying smtp-source's 2 KB messages over 20 sessions into an smtp-sink. After a warm-up the
# statistics are reset (statements, pg_stat_database, pg_stat_wal), a JFR recording (settings=profile) is started with
# jcmd, N messages are sent, and once the sink counted them and the ledger settled them all, it prints per message:
# each statement's calls, rows, shared buffers hit/read/dirtied, WAL records/FPI/bytes; commits and WAL writes/syncs;
# WAL by resource manager and by relation (pg_walinspect); CPU ticks of the JVM and of PostgreSQL (indicative on a
# shared machine); then from the recording the top methods (self), packages (self), the gateway's frames (inclusive),
# threads, allocation per message and its top sites, and GC counts.
# Features: suppression and resubmission detection at their defaults (on); tenants (quotas) and tracking need SMTP AUTH
# and a Postfix log, not given here (bench/quota.sh and bench/tracking-profile.sh measure those).
# KIND=http: the load is POST /api/v1/messages with a fresh Idempotency-Key each (wrk, bench/http-send.lua) over SESSIONS
# keep-alive connections for N / 500 seconds (N is then only the duration; the figures are per message in the ledger).
# PREFILL_CLAIMS=K: K random resubmission claims written before the measured run (the steady state's claim index).
# PLANNING=on: pg_stat_statements.track_planning (the plans and plan_ms columns; off: zeros).
# PLAN_CACHE_MODE=force_generic_plan: the server's plan_cache_mode (ALTER SYSTEM), to try generic plans without a build.
# NOJFR=1: no recording (the CPU figures without the profiler's own cost).
# Usage: bench/throughput-profile.sh [messages, default 20000] [size, default 2048] [sessions, default 20] [warm-up, 10000]
# Needs root (smtp-sink -u nobody). Loopback only. Leaves its work directory (gateway log, recording) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-20000}
SIZE=${2:-2048}
SESSIONS=${3:-20}
WARM=${4:-10000}
RUN_LIMIT=600
need_postfix_tools
build_jar
work=$(mktemp -d /tmp/ledgerpost-throughput-profile.XXXX)
chmod 755 "$work"
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || true)
trap 'kill ${GATEWAY_PID:-} 2>/dev/null || true; pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true' EXIT
mkdir -p "$work/lp"
# A send key for KIND=http (bench/relay.sh's way: api.keysFile, a rate limit no run reaches).
export HTTP_KEY; HTTP_KEY=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
echo "bench:$(printf %s "$HTTP_KEY" | sha256sum | cut -d' ' -f1):1000000" > "$work/lp/api-keys"
gateway() {
  start_gateway "$work/lp" "$work/gateway.log" LEDGERPOST_SMTP_PORT="$LP" LEDGERPOST_HTTP_PORT="$HTTP" \
    LEDGERPOST_DOWNSTREAM_PORT="$SINK" LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONS=2000 \
    LEDGERPOST_SMTP_MAXCONNECTIONSPERADDRESS=2000 LEDGERPOST_API_KEYSFILE="$work/lp/api-keys"
  local pgport
  pgport=$(grep -o 'localhost:[0-9]*/postgres' "$work/gateway.log" | tail -1 | cut -d: -f2 | cut -d/ -f1)
  PSQL="$PGBIN/psql -X -q -At -h localhost -p $pgport -U postgres"
  PGPID=$(head -1 "$work/lp/data/pg/postmaster.pid")
}
gateway
$PSQL -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" -c "ALTER SYSTEM SET pg_stat_statements.max = 1000" \
  -c "ALTER SYSTEM SET pg_stat_statements.track_planning = ${PLANNING:-off}" \
  -c "ALTER SYSTEM SET plan_cache_mode = ${PLAN_CACHE_MODE:-auto}" >/dev/null
kill -TERM "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true
mv "$work/gateway.log" "$work/gateway-first.log"
gateway
$PSQL -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null
pg_ticks() {
  local t; t=$(awk '{print $14 + $15 + $16 + $17}' /proc/$PGPID/stat)
  for c in $(pgrep -P "$PGPID"); do t=$((t + $(awk '{print $14 + $15}' /proc/$c/stat 2>/dev/null || echo 0))); done
  echo "$t"
}
# pg_procs: "pid kind ticks" for the postmaster's children (a backend's kind is its user), and "exited" for the ticks of
# children that ended (the postmaster's cutime + cstime: autovacuum workers mostly).
pg_procs() {
  local c
  echo "$PGPID postmaster $(awk '{print $14 + $15}' /proc/$PGPID/stat)"
  echo "0 exited $(awk '{print $16 + $17}' /proc/$PGPID/stat)"
  for c in $(pgrep -P "$PGPID"); do
    echo "$c $(tr '\0' ' ' < /proc/$c/cmdline 2>/dev/null | awk '{print ($2 == "postgres" && $3 == "postgres") ? "backend" : $2 "_" $3}') $(awk '{print $14 + $15}' /proc/$c/stat 2>/dev/null || echo 0)"
  done
}
# settled: no row of the ledger is still PENDING and the outbox has nothing unpublished (within RUN_LIMIT).
# load COUNT: COUNT messages over SMTP (smtp-source, SESSIONS sessions) -> the rate; with KIND=http, wrk posts with a fresh
# Idempotency-Key each over SESSIONS keep-alive connections for COUNT / 500 seconds (bench/http-send.lua) -> the rate.
load() {
  if [ "${KIND:-smtp}" = http ]; then
    local secs=$(( $1 / 500 > 5 ? $1 / 500 : 5 ))
    sink_start
    HTTP_SIZE=$SIZE HTTP_RUN=$(date +%s%N) timeout $((secs + 60)) wrk -t2 -c"$SESSIONS" -d"${secs}s" --timeout 30s \
      -s bench/http-send.lua "http://127.0.0.1:$HTTP" > "$work/wrk.out" 2>&1 || true
    grep '^wrk-summary' "$work/wrk.out" | sed 's/^/  /' >&2
    grep -o 'Requests/sec: *[0-9.]*' "$work/wrk.out" | awk '{print int($2)}'
  else
    relay_rate "$LP" "$1" "$SIZE" "$SESSIONS"
  fi
}
settled() {
  local until=$((SECONDS + 120))
  until [ "$($PSQL -c "SELECT (SELECT count(*) FROM messages WHERE status = 'PENDING') + (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM outbox_pub p WHERE p.seq = o.seq))")" -eq 0 ]; do
    (( SECONDS < until )) || { echo "warning: the ledger did not settle within 120 s" >&2; return; }
    sleep 0.2
  done
}
# JFR's profile settings, but Java code sampled every ms and native code every 5 (10 and 20 give too few samples here).
python3 - "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")/lib/jfr/profile.jfc" "$work/profile.jfc" <<'JFC'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'(<event name="jdk.ExecutionSample">.*?<setting name="period"[^>]*>)[^<]*', r'\g<1>1 ms', s, flags=re.S)
s = re.sub(r'(<event name="jdk.NativeMethodSample">.*?<setting name="period"[^>]*>)[^<]*', r'\g<1>5 ms', s, flags=re.S)
open(sys.argv[2], "w").write(s)
JFC
echo "warm-up: $WARM messages" >&2
rate=$(load "$WARM"); echo "warm-up rate $rate/s" >&2
settled
# PREFILL_CLAIMS=K: K resubmission claims of random fingerprints first, spread over the 5-day window as a steady state
# holds them (V117: each in the hour it was taken, in its day's partition), then the retention job's pass (the days'
# partitions, the closed days' fingerprint indexes). Before V117 the claims' B-tree was keyed by the hash alone: each
# insert landed on a random leaf, and its first change after a checkpoint was an FPI.
[ -z "${PREFILL_CLAIMS:-}" ] || $PSQL -c "SELECT resubmission_claims_make(now() - interval '6 days', 7)" \
  -c "INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at)
  SELECT resubmission_claim_hour(t), gen_random_uuid(), gen_random_uuid(), t, t + interval '5 days'
    FROM (SELECT now() - random() * interval '5 days' AS t FROM generate_series(1, $PREFILL_CLAIMS)) g" \
  -c "SELECT resubmission_claims_index(true)" -c "SELECT resubmission_claims_keep(432000, 1000)" >/dev/null
$PSQL -c "VACUUM (ANALYZE)" -c "CHECKPOINT" >/dev/null
$PSQL -c "SELECT pg_stat_statements_reset()" -c "SELECT pg_stat_reset()" -c "SELECT pg_stat_reset_shared('wal')" >/dev/null
rows0=$($PSQL -c "SELECT count(*) FROM messages"); lsn0=$($PSQL -c "SELECT pg_current_wal_lsn()")
[ -n "${NOJFR:-}" ] || jcmd "$GATEWAY_PID" JFR.start name=tp settings="$work/profile.jfc" filename="$work/run.jfr" >/dev/null
pg_procs > "$work/procs0"
j0=$(awk '{print $14 + $15}' /proc/$GATEWAY_PID/stat); p0=$(pg_ticks)
echo "measured: $N messages" >&2
rate=$(load "$N")
settled
j1=$(awk '{print $14 + $15}' /proc/$GATEWAY_PID/stat); p1=$(pg_ticks)
[ -n "${NOJFR:-}" ] || jcmd "$GATEWAY_PID" JFR.stop name=tp >/dev/null
pg_procs > "$work/procs1"
lsn1=$($PSQL -c "SELECT pg_current_wal_lsn()"); rows1=$($PSQL -c "SELECT count(*) FROM messages")
n=$((rows1 - rows0))
printf "throughput profile (%s)  %s  %s messages of %s B over %s sessions (ledger rows %s), rate %s/s after a warm-up of %s; commit %s\n" \
  "${KIND:-smtp}" "$(date -u +%FT%TZ)" "$N" "$SIZE" "$SESSIONS" "$n" "$rate" "$WARM" "$(git rev-parse --short HEAD)"
printf "CPU per message (ticks, indicative on a shared machine): JVM %s ms, PostgreSQL %s ms\n" \
  "$(awk "BEGIN {printf \"%.3f\", ($j1 - $j0) * 10 / $n}")" "$(awk "BEGIN {printf \"%.3f\", ($p1 - $p0) * 10 / $n}")"
echo "PostgreSQL CPU per message by process (ms; kind from its title; exited = children that ended, autovacuum workers):"
awk -v n="$n" 'NR == FNR {t0[$1] = $3; next} {d[$2] += $3 - (($1 in t0) ? t0[$1] : 0)}
  END {for (k in d) printf "  %-28s %.3f\n", k, d[k] * 10 / n}' "$work/procs0" "$work/procs1" | sort -k2 -rn
$PSQL -F ' | ' <<SQL
\echo == per statement, per message (pg_stat_statements; blks = shared buffers) ==
SELECT 'calls', 'plans', 'plan_ms', 'rows', 'hit', 'read', 'dirtied', 'written', 'wal_rec', 'wal_fpi', 'wal_B', 'exec_ms', 'statement';
SELECT round(calls::numeric / $n, 3), round(plans::numeric / $n, 3), round(total_plan_time::numeric / $n, 4),
       round(rows::numeric / $n, 2), round(shared_blks_hit::numeric / $n, 1),
       round(shared_blks_read::numeric / $n, 2), round(shared_blks_dirtied::numeric / $n, 2),
       round(shared_blks_written::numeric / $n, 2), round(wal_records::numeric / $n, 2), round(wal_fpi::numeric / $n, 3),
       round(wal_bytes / $n, 0), round(total_exec_time::numeric / $n, 4),
       left(regexp_replace(query, '\s+', ' ', 'g'), 170)
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND calls > 0
 ORDER BY shared_blks_hit + shared_blks_read DESC, calls DESC LIMIT 45;
SELECT 'sum', round(sum(calls)::numeric / $n, 3), round(sum(plans)::numeric / $n, 3),
       round(sum(total_plan_time)::numeric / $n, 4), round(sum(rows)::numeric / $n, 2), round(sum(shared_blks_hit)::numeric / $n, 1),
       round(sum(shared_blks_read)::numeric / $n, 2), round(sum(shared_blks_dirtied)::numeric / $n, 2),
       round(sum(shared_blks_written)::numeric / $n, 2), round(sum(wal_records)::numeric / $n, 2),
       round(sum(wal_fpi)::numeric / $n, 3), round(sum(wal_bytes) / $n, 0), round(sum(total_exec_time)::numeric / $n, 4)
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database());
\echo == transactions (pg_stat_database, this database) and WAL (pg_stat_wal), per message ==
SELECT 'xact_commit/msg', round(xact_commit::numeric / $n, 3), 'xact_rollback/msg', round(xact_rollback::numeric / $n, 4),
       'tup_inserted/msg', round(tup_inserted::numeric / $n, 2), 'tup_updated/msg', round(tup_updated::numeric / $n, 2),
       'tup_deleted/msg', round(tup_deleted::numeric / $n, 2)
  FROM pg_stat_database WHERE datname = current_database();
SELECT 'wal_records/msg', round(wal_records::numeric / $n, 2), 'wal_fpi/msg', round(wal_fpi::numeric / $n, 3),
       'wal_bytes/msg', round(wal_bytes / $n, 0), 'wal_write/msg', round(wal_write::numeric / $n, 3),
       'wal_sync/msg', round(wal_sync::numeric / $n, 3), 'msgs per sync', round($n / greatest(wal_sync, 1)::numeric, 1),
       'wal_buffers_full', wal_buffers_full FROM pg_stat_wal;
\echo == WAL by resource manager, per message (pg_walinspect, $lsn0 .. $lsn1) ==
SELECT "resource_manager/record_type" AS rmgr, round(count::numeric / $n, 2) AS rec, round(record_size::numeric / $n, 0) AS rec_B,
       round(fpi_size::numeric / $n, 0) AS fpi_B, round(combined_size::numeric / $n, 0) AS all_B
  FROM pg_get_wal_stats('$lsn0', '$lsn1', false) WHERE count > 0 ORDER BY combined_size DESC;
\echo == WAL by record type, per message (top 20) ==
SELECT "resource_manager/record_type" AS rmgr, round(count::numeric / $n, 2) AS rec, round(combined_size::numeric / $n, 0) AS all_B
  FROM pg_get_wal_stats('$lsn0', '$lsn1', true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 20;
\echo == WAL by relation, per message (block references; a record that touches two relations counts in both) ==
SELECT coalesce(pg_filenode_relation(CASE WHEN reltablespace = 1663 THEN 0 ELSE reltablespace END, relfilenode)::text,
                relfilenode::text) AS relation, relforknumber AS fork,
       round(count(DISTINCT start_lsn)::numeric / $n, 2) AS rec, round(sum(block_data_length)::numeric / $n, 0) AS data_B,
       round(count(*) FILTER (WHERE block_fpi_length > 0)::numeric / $n, 3) AS fpi, round(sum(block_fpi_length)::numeric / $n, 0) AS fpi_B
  FROM pg_get_wal_block_info('$lsn0', '$lsn1') GROUP BY 1, 2
 ORDER BY sum(block_data_length) + sum(block_fpi_length) DESC LIMIT 25;
\echo == the tables written: rows inserted, updated, updated HOT, deleted in the run ==
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY 2 DESC;
SQL
[ -n "${NOJFR:-}" ] || python3 bench/jfr_summary.py "$work/run.jfr" "$n"
echo "work directory: $work (gateway.log, run.jfr)"
