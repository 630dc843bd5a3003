#!/usr/bin/env bash
# Fault soak (issue 11). SMTP load (bench/soak_load.py: threads, a unique Message-ID per message, every reply
# recorded) through the jar on its embedded PostgreSQL to a sink that keeps every message (scripts/smtp_sink.py),
# while, at random, one fault at a time:
#   kill-gateway   SIGKILL the gateway and start it again (its PostgreSQL is left running: the start stops it)
#   kill-postgres  pg_ctl stop -m immediate on the embedded data directory, an outage of 2-5 s, pg_ctl restart
#   terminate      pg_terminate_backend() on every backend of the gateway
#   lock           LOCK TABLE messages IN ACCESS EXCLUSIVE MODE for 2-5 s, from psql
# Then the load stops, the gateway is stopped and started cleanly (its outcome journal replays and empties),
# and client replies, ledger rows and the sink's copies are reconciled by Message-ID (bench/soak_check.py):
# the invariant table and counts of replies by code and rows by status. Exit status 1 if an invariant fails.
#
# Usage: bench/soak.sh [seconds of load, default 120]. SOAK_THREADS (8), SOAK_SEED (random), SOAK_FAULTS (a
# subset of the four names above, space-separated) may be set; SOAK_KEEP=1 keeps the work directory of a run
# that passed (one that failed is always kept).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
DURATION=${1:-120}
THREADS=${SOAK_THREADS:-8}
SEED=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
read -r -a FAULTS <<< "${SOAK_FAULTS:-kill-gateway kill-postgres terminate lock}"
PSQL=$(ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | tail -1)
[ -x "$PSQL" ] || { echo "psql not found under /usr/lib/postgresql/*/bin"; exit 2; }
[ -f target/ledgerpost.jar ] || flock /tmp/mvn.lock mvn -q -B -DskipTests package

work=$(mktemp -d /tmp/ledgerpost-soak.XXXX)
mkdir -p "$work/gw" "$work/sink"
DATA=$work/gw/data/pg
JOURNAL=$work/gw/data/journal/outcomes.log
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
SINK=$(free_port); SMTP=$(free_port); HTTP=$(free_port); PGPORT=$(free_port)
start=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - start)) "$*"; }

GW=; SINKPID=; LOADPID=; n=0
postmaster() { head -1 "$DATA/postmaster.pid" 2>/dev/null || true; }
cleanup() {
  [ -n "$LOADPID" ] && kill "$LOADPID" 2>/dev/null || true
  if [ -n "$GW" ] && kill -0 "$GW" 2>/dev/null; then kill -TERM "$GW"; wait "$GW" 2>/dev/null || true; fi
  local pg; pg=$(postmaster)
  if [ -n "$pg" ] && kill -0 "$pg" 2>/dev/null; then kill -INT "$pg" 2>/dev/null || true; fi
  [ -n "$SINKPID" ] && kill "$SINKPID" 2>/dev/null || true
}
trap cleanup EXIT

# start_gateway: runs the jar in $work/gw (data/ is there) and waits until it is ready, or fails.
start_gateway() {
  n=$((n + 1))
  local log=$work/gateway-$n.log
  ( cd "$work/gw" && exec env LEDGERPOST_SMTP_PORT=$SMTP LEDGERPOST_HTTP_PORT=$HTTP LEDGERPOST_DOWNSTREAM_PORT=$SINK \
      LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_LEDGER_EMBEDDEDPORT=$PGPORT LEDGERPOST_API_ADMINTOKEN=soak \
      LEDGERPOST_SMTP_HOSTNAME=gateway.soak java -Xmx512m -jar "$root/target/ledgerpost.jar" > "$log" 2>&1 ) &
  GW=$!
  local deadline=$((SECONDS + 120))
  until grep -qs "Ledgerpost ready" "$log"; do
    if (( SECONDS > deadline )) || ! kill -0 "$GW" 2>/dev/null; then
      say "the gateway did not start ($log):"; tail -20 "$log"; exit 2
    fi
    sleep 0.2
  done
}
stop_gateway() {
  kill -TERM "$GW"
  local deadline=$((SECONDS + 90))
  while kill -0 "$GW" 2>/dev/null; do
    (( SECONDS < deadline )) || { say "the gateway did not stop on SIGTERM: SIGKILL"; kill -KILL "$GW"; }
    sleep 0.2
  done
  wait "$GW" 2>/dev/null || true
}
sql() { "$PSQL" -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -X -q -At "$@"; }

python3 scripts/smtp_sink.py "$SINK" --dir "$work/sink" > "$work/sink.log" 2>&1 &
SINKPID=$!
start_gateway
PGBIN=$(dirname "$(readlink "/proc/$(postmaster)/exe")")   # the embedded server's own pg_ctl (PostgreSQL 17)
# pg_ctl refuses to run as root; zonky runs it in a user namespace (unshare -U), and so does this script.
PGCTL=("$PGBIN/pg_ctl")
if [ "$(id -u)" = 0 ]; then PGCTL=(unshare -U "$PGBIN/pg_ctl"); fi
say "soak: ${DURATION}s of load, $THREADS SMTP threads, seed $SEED, work directory $work"
say "gateway pid $GW, SMTP $SMTP, sink $SINK, psql postgresql://postgres@localhost:$PGPORT/postgres"

python3 bench/soak_load.py "$SMTP" "$THREADS" "$work/replies.jsonl" "$work/stop" > "$work/load.log" 2>&1 &
LOADPID=$!
declare -A faults=()
until (( SECONDS - start >= DURATION )); do
  sleep $((2 + RANDOM % 5))
  (( SECONDS - start < DURATION )) || break
  fault=${FAULTS[$((RANDOM % ${#FAULTS[@]}))]}
  case $fault in
    kill-gateway)
       t0=$SECONDS; kill -KILL "$GW"; wait "$GW" 2>/dev/null || true
       start_gateway
       say "kill-gateway: SIGKILL, restarted in $((SECONDS - t0))s (pid $GW)$(grep -qs 'stopped the embedded PostgreSQL' "$work/gateway-$n.log" && echo '; it stopped the PostgreSQL left running')" ;;
    kill-postgres)
       "${PGCTL[@]}" stop -D "$DATA" -m immediate -w -t 30 >> "$work/pg_ctl.log" 2>&1 || true
       outage=$((2 + RANDOM % 4)); sleep "$outage"
       if "${PGCTL[@]}" restart -D "$DATA" -m immediate -w -t 60 -l "$work/postgres-restarted.log" >> "$work/pg_ctl.log" 2>&1; then
         say "kill-postgres: immediate stop, ${outage}s down, restarted"
       else
         say "kill-postgres: immediate stop, ${outage}s down, restart FAILED (see $work/pg_ctl.log)"
       fi ;;
    terminate)
       k=$(sql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                   WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" 2>&1 || true)
       say "terminate: pg_terminate_backend on $k backends" ;;
    lock)
       hold=$((2 + RANDOM % 4))
       sql -c "BEGIN; LOCK TABLE messages IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($hold); COMMIT;" > /dev/null 2>&1 \
         && say "lock: messages held ACCESS EXCLUSIVE for ${hold}s" || say "lock: could not take the lock"
       ;;
    *) say "unknown fault $fault"; exit 2 ;;
  esac
  faults[$fault]=$(( ${faults[$fault]:-0} + 1 ))
done

touch "$work/stop"
deadline=$((SECONDS + 120))
while kill -0 "$LOADPID" 2>/dev/null; do
  (( SECONDS < deadline )) || { say "the load did not stop: killed"; kill "$LOADPID"; break; }
  sleep 0.5
done
wait "$LOADPID" 2>/dev/null || true
LOADPID=
say "load stopped: $(wc -l < "$work/replies.jsonl") messages; faults: $(for f in "${!faults[@]}"; do printf '%s=%s ' "$f" "${faults[$f]}"; done)"

# Settle: a clean stop and start, so that the outcome journal replays; then wait for it to empty.
stop_gateway
start_gateway
deadline=$((SECONDS + 120))
until [ ! -s "$JOURNAL" ]; do
  (( SECONDS < deadline )) || { say "the outcome journal did not empty within 120 s"; break; }
  sleep 0.5
done
say "settled: journal $( [ -s "$JOURNAL" ] && echo "NOT empty" || echo empty ), restarts $((n - 1))"
sql -F $'\t' -c "SELECT coalesce(message_id_header, ''), status FROM messages" > "$work/ledger.tsv"
stop_gateway
GW=
kill "$SINKPID" 2>/dev/null || true; wait "$SINKPID" 2>/dev/null || true
SINKPID=

python3 bench/soak_check.py "$work/replies.jsonl" "$work/ledger.tsv" "$work/sink" && status=0 || status=1
if [ $status -eq 0 ] && [ -z "${SOAK_KEEP:-}" ]; then
  rm -rf "$work"
else
  say "work directory kept: $work"
fi
exit $status
