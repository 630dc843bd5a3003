#!/usr/bin/env bash
# Writes to stdout the pgbench script of bench/relay.sh's batched ceiling: the ledger's group-committed open and
# settle for a batch of messages with one recipient each. The statements are not copied here: they are read from
# the constants the gateway prepares (OpenBatch.WRITES as its first attempt runs it, SettleBatch.SETTLE), so the
# figure is always that of the statements the gateway runs. Their $n parameters become pgbench variables :oN (open)
# and :sN (settle), set per transaction by the \gset below. Each statement is one transaction, as in the
# gateway; relay.sh multiplies the transactions per second by the batch.
# The ids are random (v4), not ledger ids: they land in the DEFAULT partition, not in the week's (see
# bench/results/2026-12-01-relay-partitions-63.txt).
# Usage: [CEILING_CLAIMS=0] bench/ledger-ceiling-batched.sh [messages per statement, default 10] > batched.sql
set -euo pipefail
cd "$(dirname "$0")/.."
BATCH=${1:-10}
LEDGER=src/main/java/dev/ledgerpost/ledger

# java_sql FILE CONSTANT: the text of the text block `CONSTANT = """ ... """;` in FILE (indentation is harmless in SQL).
java_sql() {
  local sql
  sql=$(awk -v c="$2 = \"\"\"" 'index($0, c) { on = 1; next } on && /"""/ { sub(/""".*/, ""); print; exit } on { print }' "$1")
  [ -n "$sql" ] || { echo "no text block $2 in $1" >&2; exit 1; }
  printf '%s\n' "$sql"
}

n="ARRAY[$BATCH]"
# CEILING_CLAIMS=0: no resubmission claims (smtp.resubmission.mode: off); else each message claims a fingerprint of
# its own, as every message with one Message-ID does under the default mode (docs/contract.md §1.13).
if [ "${CEILING_CLAIMS:-1}" = 0 ]; then
  CLAIMS="array_fill(NULL::uuid, $n)"
else
  CLAIMS="(SELECT array_agg(gen_random_uuid()) FROM generate_series(1, $BATCH))"
fi
cat <<SQL
SELECT ids AS o1, array_fill('SMTP'::text, $n) AS o2, array_fill(NULL::text, $n) AS o3, array_fill('127.0.0.1'::text, $n) AS o4,
       array_fill('bench'::text, $n) AS o5, array_fill('a@example.com'::text, $n) AS o6,
       (SELECT array_agg('<' || id || '@example.com>') FROM unnest(ids) AS t(id)) AS o7,
       array_fill(2048::bigint, $n) AS o8, array_fill('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'::text, $n) AS o9,
       array_fill('127.0.0.1:25'::text, $n) AS o10, array_fill(now(), $n) AS o11,
       ids AS o12, array_fill(0, $n) AS o13, array_fill('b@example.net'::text, $n) AS o14, array_fill('PENDING'::text, $n) AS o15,
       array_fill('250 2.1.5 Ok'::text, $n) AS o16, 'bench' AS o17, array_fill(NULL::text, $n) AS o18, array_fill(NULL::text, $n) AS o19,
       array_fill(NULL::text, $n) AS o20, array_fill(NULL::text, $n) AS o21,
       $CLAIMS AS o22, array_fill(432000::float8, $n) AS o23, array_fill(NULL::uuid, $n) AS o24,
       ids AS s1, array_fill(1, $n) AS s2, array_fill('SENT'::text, $n) AS s3, array_fill('250 2.0.0 Ok: queued as 4XyZ'::text, $n) AS s4,
       array_fill(NULL::text, $n) AS s5, array_fill('ACCEPTED'::text, $n) AS s6, array_fill(250, $n) AS s7, array_fill('2.0.0'::text, $n) AS s8,
       array_fill('Ok: queued as 4XyZ'::text, $n) AS s9, array_fill(1, $n) AS s10,
       array_fill('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'::text, $n) AS s11
  FROM (SELECT array_agg(gen_random_uuid()) AS ids FROM generate_series(1, $BATCH)) AS batch \gset
SQL
{ java_sql "$LEDGER/OpenBatch.java" WRITES | sed 's/%s//'; echo 'SELECT id FROM m;'; } | sed -E 's/\$([0-9]+)/:o\1/g'
{ java_sql "$LEDGER/SettleBatch.java" SETTLE; echo ';'; } | sed -E 's/\$([0-9]+)/:s\1/g'
