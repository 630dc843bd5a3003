#!/usr/bin/env bash
# The cost of resubmission detection (issue 28, docs/contract.md §1.13): the same build twice, side by side in one run,
# `smtp.resubmission.mode: detect` (the default) against `off`, each gateway on its own embedded PostgreSQL, both
# relaying to one smtp-sink. smtp-source writes a unique Message-ID into every message, so with detect every message
# claims its fingerprint in the open (the case whose cost is asked for). Rounds alternate detect, off / off, detect (ABBA)
# after a warm-up of both, so a drift of the machine falls on both alike; each run starts after a VACUUM (ANALYZE) and a
# CHECKPOINT of its ledger, so no checkpoint or autovacuum of an earlier run's rows falls into it. Per round: end-to-end rate (messages / first
# sent .. last counted at the sink), CPU-ms per message of the JVM and of PostgreSQL, WAL bytes per message.
# Prints a table and the median of the rounds' detect / off ratios; writes bench/results/<date>-resubmission.txt.
# Usage: bench/resubmission.sh [messages per round, default 20000] [rounds per mode, default 3] [sessions, default 20]
# Needs root (smtp-sink drops to nobody). Loopback only; every run is bounded by RUN_LIMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-20000}
ROUNDS=${2:-3}
SESSIONS=${3:-20}
SIZE=${RESUBMISSION_SIZE:-2048}
RUN_LIMIT=300
need_postfix_tools
build_jar
cost_setup resub
for mode in detect off; do cost_gateway "$mode" LEDGERPOST_SMTP_RESUBMISSION_MODE="$mode"; done

feature() { ${PSQL[$1]} -c "SELECT count(*) FROM resubmission_claims"; }

# run MODE N -> messages per second, end to end (or ERR)
run() { relay_rate "${PORT[$1]}" "$2" "$SIZE" "$SESSIONS"; }

echo "warming up both..."
for mode in detect off; do run "$mode" "$N" >/dev/null; done

stamp=$(date -u +%Y-%m-%d)
out="bench/results/$stamp-resubmission.txt"
mkdir -p bench/results
{
  printf "Resubmission detection cost  %s  (%s cores, %s)  %s messages of %s B over %s sessions per round\n" \
    "$(date -u +%FT%TZ)" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$N" "$SIZE" "$SESSIONS"
  printf "%-6s %-6s %8s %8s %8s %8s %8s\n" round mode msg_s jvm_ms pg_ms wal_B claims
} | tee "$out"
cost_rounds "$out" "$ROUNDS" "$N" detect off
cost_summary "$out" detect off | tee -a "$out"
