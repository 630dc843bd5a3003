#!/usr/bin/env bash
# Capacity: what one relayed message costs the ledger on disk (issue 20). Relays N messages through the gateway jar
# (embedded PostgreSQL, default settings) to smtp-sink, as the other bench scripts do, and measures between before
# and after: rows per table (exact counts), bytes per table (pg_total_relation_size: heap + indexes + TOAST, summed
# over partitions), and WAL (pg_current_wal_lsn). Then VACUUM FULL, and the same byte delta compacted (the lower
# bound: no free space left in the pages). Both deltas start from the warm-up's rows compacted. Bytes are not timing:
# a busy machine gives the same figures. Loopback only, bounded (RUN_LIMIT per run); stops what it started by PID.
# Usage: bench/capacity.sh [messages, default 20000] [recipients per message, default 1] [message bytes, default 2048]
# Writes bench/results/<date>-capacity.txt (what it prints) and .json; <date>-capacity-r<R> for R recipients.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-20000} RCPTS=${2:-1} SIZE=${3:-2048}   # messages, recipients each, bytes each
SESSIONS=20 RUN_LIMIT=300   # smtp-source's sessions; seconds a relay or its settling may take
WARM=2000   # relayed first: the tables and indexes are past their first pages, the JVM is warm
need_postfix_tools
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1 || true)
if [ -z "$PGBIN" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq postgresql-client >/dev/null
  PGBIN=$(dirname "$(command -v psql)")
fi
build_jar
work=$(mktemp -d /tmp/ledgerpost-capacity.XXXX)
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody -c "127.0.0.1:$SINK" 1000 > "$work/sink.out" 2>&1 &
SINKPID=$!
trap 'kill ${GATEWAY_PID:-} $SINKPID 2>/dev/null || true' EXIT
start_gateway "$work" "$work/gateway.log" LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP \
  LEDGERPOST_DOWNSTREAM_PORT=$SINK LEDGERPOST_DOWNSTREAM_STARTTLS=none
PGPORT=$(grep -o 'localhost:[0-9]*/postgres' "$work/gateway.log" | head -1 | cut -d: -f2 | cut -d/ -f1)
PSQL="$PGBIN/psql -X -q -At -h localhost -p $PGPORT -U postgres -d postgres"

# Every table of the schema that is not itself a partition, with its partitions' rows and bytes (pg_inherits, all levels).
snapshot() {
  $PSQL -F' ' -c "WITH RECURSIVE tree(root, oid) AS (
      SELECT c.oid, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      UNION ALL SELECT tree.root, i.inhrelid FROM tree JOIN pg_inherits i ON i.inhparent = tree.oid)
    SELECT root::regclass, sum(pg_total_relation_size(oid)), sum(pg_table_size(oid)), sum(pg_indexes_size(oid))
      FROM tree GROUP BY root ORDER BY 1" > "$1.bytes"
  : > "$1.rows"
  while read -r t _; do echo "$t $($PSQL -c "SELECT count(*) FROM $t")" >> "$1.rows"; done < "$1.bytes"
  $PSQL -c "SELECT pg_current_wal_lsn()" > "$1.lsn"
  $PSQL -c "SELECT pg_database_size(current_database())" > "$1.db"
}
ledger_messages() { $PSQL -c "SELECT count(*) FROM messages WHERE settled_at IS NOT NULL"; }

# relay COUNT: smtp-source sends COUNT messages; waits until the ledger has settled them all.
relay() {
  local n=$1 before until
  before=$(ledger_messages)
  timeout "$RUN_LIMIT" smtp-source -s "$SESSIONS" -l "$SIZE" -m "$n" -r "$RCPTS" -d -f bench@example.com -t sink@example.net \
    "127.0.0.1:$LP" >/dev/null 2>&1 || true
  until=$((SECONDS + RUN_LIMIT))
  until [ $(( $(ledger_messages) - before )) -ge "$n" ]; do
    (( SECONDS < until )) || { echo "only $(( $(ledger_messages) - before )) of $n messages settled in the ledger"; exit 1; }
    sleep 0.5
  done
}

echo "warming up ($WARM messages)..."
relay "$WARM"
$PSQL -c "VACUUM FULL" -c "CHECKPOINT" >/dev/null   # the same compacted start for both figures below
snapshot "$work/a"
t0=$SECONDS
relay "$N"
secs=$((SECONDS - t0))
snapshot "$work/b"
$PSQL -c "VACUUM FULL" >/dev/null
snapshot "$work/c"

stamp=$(date -u +%Y-%m-%d)
mkdir -p bench/results
name="$stamp-capacity$([ "$RCPTS" -eq 1 ] || echo "-r$RCPTS")"
out="bench/results/$name.txt"
python3 - "$work" "$N" "$RCPTS" "$SIZE" "$secs" "bench/results/$name.json" <<'PY' | tee "$out"
import json, sys
work, n, rcpts, size, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def load(tag):
    b = {}
    for line in open(f"{work}/{tag}.bytes"):
        t, tot, tab, idx = line.split()
        b[t] = [int(tot), int(tab), int(idx)]
    r = {l.split()[0]: int(l.split()[1]) for l in open(f"{work}/{tag}.rows")}
    lsn = open(f"{work}/{tag}.lsn").read().strip()
    hi, lo = lsn.split("/")
    return b, r, (int(hi, 16) << 32) + int(lo, 16), int(open(f"{work}/{tag}.db").read())
(ba, ra, la, da), (bb, rb, lb, db), (bc, rc, lc, dc) = load("a"), load("b"), load("c")
print(f"Ledgerpost capacity: {n} messages relayed ({rcpts} recipient(s), {size} bytes each, {secs} s), embedded PostgreSQL 17")
print(f"{'table':<22}{'rows/msg':>9}{'bytes/msg':>11}{'heap':>8}{'index':>8}{'compact':>9}")
rows = []
tot_rows = tot_bytes = tot_compact = 0
for t in sorted(bb):
    dr = rb.get(t, 0) - ra.get(t, 0)
    d = [bb[t][i] - ba.get(t, [0, 0, 0])[i] for i in range(3)]
    compact = (bc[t][0] - ba.get(t, [0, 0, 0])[0]) / n
    if dr == 0 and d[0] == 0:
        continue
    rows.append({"table": t, "rows_per_message": dr / n, "bytes_per_message": d[0] / n, "heap_toast_bytes_per_message": d[1] / n,
                 "index_bytes_per_message": d[2] / n, "compacted_bytes_per_message": compact})
    tot_rows += dr; tot_bytes += d[0]; tot_compact += bc[t][0] - ba.get(t, [0, 0, 0])[0]
    print(f"{t:<22}{dr / n:>9.2f}{d[0] / n:>11.0f}{d[1] / n:>8.0f}{d[2] / n:>8.0f}{compact:>9.0f}")
wal = (lb - la) / n
print(f"{'all tables':<22}{tot_rows / n:>9.2f}{tot_bytes / n:>11.0f}{'':>8}{'':>8}{tot_compact / n:>9.0f}")
print(f"WAL: {wal:.0f} bytes per message; database size grew by {(db - da) / n:.0f} bytes per message")
print("bytes/msg = pg_total_relation_size delta / messages (heap + TOAST, indexes), as written with autovacuum on;")
print("compact = the same delta after VACUUM FULL (no free space left in the pages): the floor")
json.dump({"messages": n, "recipients": rcpts, "size": size, "seconds": secs, "tables": rows,
           "rows_per_message": tot_rows / n, "bytes_per_message": tot_bytes / n, "compacted_bytes_per_message": tot_compact / n,
           "wal_bytes_per_message": wal, "database_bytes_per_message": (db - da) / n}, open(sys.argv[6], "w"), indent=1)
PY
echo "figures: $out"
