#!/usr/bin/env bash
# The cost of downstream tracking (issue 30, docs/design.md §8.13): the same build twice, side by side in one run, each
# gateway on its own embedded PostgreSQL relaying to its own Postfix (bench/lib.sh's postfix_instance, logging to a
# maillog_file), both Postfixes relaying to one smtp-sink. `on` follows its Postfix's log (tracking.postfixLog) and
# records a delivered fact per recipient; `off` has no log to follow. Each gateway's Postfix logs only its own traffic,
# so the follower reads what an operator's would. Rounds alternate on, off / off, on (ABBA) after a warm-up of both;
# each run starts after a VACUUM (ANALYZE) and a CHECKPOINT of its ledger and ends once its Postfix's queue is empty
# and (on) every message has its delivered fact, so the follower's work for the run's messages is inside its CPU
# figures. Per round: end-to-end rate (messages / first sent .. last counted at the sink), CPU-ms per message of the
# JVM and of PostgreSQL, WAL bytes per message, and the facts recorded.
# Prints a table and the median of the rounds' on / off ratios; writes bench/results/<date>-tracking.txt.
# Usage: bench/tracking.sh [messages per round, default 20000] [rounds, default 5] [sessions, default 20]
# Needs root (Postfix and smtp-sink). Loopback only; every run is bounded by RUN_LIMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-20000}
ROUNDS=${2:-5}
SESSIONS=${3:-20}
SIZE=${TRACKING_SIZE:-2048}
RUN_LIMIT=300
need_postfix_tools
build_jar
cost_setup tracking
declare -A PFDIR
for mode in on off; do
  PFDIR[$mode]=$work/postfix-$mode
  pfport=$(free_port)
  postfix_instance "${PFDIR[$mode]}" "$pfport" "$SINK" "${PFDIR[$mode]}/maillog" > "$work/postfix-$mode.log" 2>&1 &
  pids+=($!)
  deadline=$((SECONDS + 60))
  until (echo > /dev/tcp/127.0.0.1/$pfport) 2>/dev/null; do
    (( SECONDS < deadline )) || { echo "Postfix did not start"; cat "$work/postfix-$mode.log"; exit 1; }
    sleep 0.5
  done
  follow=""; [ "$mode" = on ] && follow="${PFDIR[$mode]}/maillog"
  cost_gateway "$mode" LEDGERPOST_DOWNSTREAM_PORT="$pfport" LEDGERPOST_TRACKING_POSTFIXLOG="$follow"
done
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
      for m in on off; do postfix -c "${PFDIR[$m]}/conf" stop >/dev/null 2>&1 || true; done
      pkill -f "smtp-sink -u nobody -c 127.0.0.1:$SINK" 2>/dev/null || true' EXIT

feature() { ${PSQL[$1]} -c "SELECT count(*) FROM delivery_facts"; }
run() { relay_rate "${PORT[$1]}" "$2" "$SIZE" "$SESSIONS"; }
# The run's messages all delivered by Postfix, and (on) every one of them (the newest N rows) with its delivered fact,
# within 120 s.
after_run() {
  postfix_drain "${PFDIR[$1]}"
  [ "$1" = on ] || return 0
  local until=$((SECONDS + 120))
  until [ "$(${PSQL[$1]} -c "SELECT count(*) FROM (SELECT id FROM messages ORDER BY id DESC LIMIT $2) m
             WHERE NOT EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = m.id AND f.state = 'delivered')")" -eq 0 ]; do
    (( SECONDS < until )) || { echo "warning: facts did not catch up within 120 s" >&2; return; }
    sleep 0.2
  done
}

echo "warming up both..."
for mode in on off; do run "$mode" "$N" >/dev/null; after_run "$mode" "$N"; done

stamp=$(date -u +%Y-%m-%d)
out="bench/results/$stamp-tracking.txt"
mkdir -p bench/results
{
  printf "Tracking cost  %s  (%s cores, %s)  %s messages of %s B over %s sessions per round, Postfix as smarthost\n" \
    "$(date -u +%FT%TZ)" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$N" "$SIZE" "$SESSIONS"
  printf "%-6s %-6s %8s %8s %8s %8s %8s\n" round mode msg_s jvm_ms pg_ms wal_B facts
} | tee -a "$out"
cost_rounds "$out" "$ROUNDS" "$N" on off
cost_summary "$out" on off | tee -a "$out"
