#!/usr/bin/env bash
# The cost of quotas (issue 31, docs/design.md §8.9): the same build twice, side by side in one run, a tenants file with
# quotas (`on`: every limit set, so high that nothing is refused) against none (`off`), each gateway on its own
# embedded PostgreSQL, both relaying to one smtp-sink. Quotas count per user, so the load authenticates
# (bench/SmtpAuthLoad.java: AUTH PLAIN once per session, then like smtp-source -d) as one user, every message of it
# counted in the open's statement. Rounds alternate on, off / off, on (ABBA) after a warm-up of both; each run starts
# after a VACUUM (ANALYZE) and a CHECKPOINT of its ledger. Per round: end-to-end rate (messages / first sent .. last
# counted at the sink), CPU-ms per message of the JVM and of PostgreSQL, WAL bytes per message, and the quota
# counter's count (on: every message counted; off: none). Then the early refusal's refresh read with 10,000 users.
# Prints a table and the median of the rounds' on / off ratios; writes bench/results/<date>-quota.txt.
# Usage: bench/quota.sh [messages per round, default 30000] [rounds, default 5] [sessions, default 20]
# Needs root (smtp-sink drops to nobody). Loopback only; every run is bounded by RUN_LIMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-30000}
ROUNDS=${2:-5}
SESSIONS=${3:-20}
SIZE=${QUOTA_SIZE:-2048}
RUN_LIMIT=300
need_postfix_tools
command -v htpasswd >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq apache2-utils >/dev/null; }
build_jar
cost_setup quota
javac -d "$work/client" bench/SmtpAuthLoad.java
htpasswd -B -b -c "$work/users" bench bench-password 2>/dev/null
cat > "$work/tenants.yml" <<'YML'
defaults:
  messagesPerHour: 1000000000
  messagesPerDay: 1000000000
  recipientsPerMessage: 1000
  messageSize: 50MB
YML

cost_gateway on LEDGERPOST_SMTP_ALLOWINSECUREAUTH=true LEDGERPOST_AUTH_USERSFILE="$work/users" \
  LEDGERPOST_TENANTS_FILE="$work/tenants.yml"
cost_gateway off LEDGERPOST_SMTP_ALLOWINSECUREAUTH=true LEDGERPOST_AUTH_USERSFILE="$work/users"

feature() { ${PSQL[$1]} -c "SELECT coalesce(sum(day_used), 0) FROM quota_usage"; }
auth_client() {
  timeout "$RUN_LIMIT" java -cp "$work/client" SmtpAuthLoad "127.0.0.1:$1" "$2" "$3" "$4" bench bench-password \
    >/dev/null || true
}
RELAY_CLIENT=auth_client
run() { relay_rate "${PORT[$1]}" "$2" "$SIZE" "$SESSIONS"; }

echo "warming up both..."
for mode in on off; do run "$mode" "$N" >/dev/null; done

stamp=$(date -u +%Y-%m-%d)
out="bench/results/$stamp-quota.txt"
mkdir -p bench/results
{
  printf "Quota cost  %s  (%s cores, %s)  %s messages of %s B over %s authenticated sessions per round\n" \
    "$(date -u +%FT%TZ)" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$N" "$SIZE" "$SESSIONS"
  printf "%-6s %-6s %8s %8s %8s %8s %8s\n" round mode msg_s jvm_ms pg_ms wal_B counted
} | tee -a "$out"
cost_rounds "$out" "$ROUNDS" "$N" on off
cost_summary "$out" on off | tee -a "$out"
# The early refusal's refresh read (every tenants.refreshInterval on every node) with 10,000 users counted today.
${PSQL[on]} -v v_users=10000 -v v_runs=7 -f bench/quota-refresh.sql | python3 -c '
import re, statistics, sys
t = sorted(float(x) for x in re.findall(r"\"Execution Time\": ([0-9.]+)", sys.stdin.read()))
print(f"refresh read, 10000 users today: median {statistics.median(t):.2f} ms of {len(t)} (min {t[0]:.2f}, max {t[-1]:.2f})")' \
  | tee -a "$out"
