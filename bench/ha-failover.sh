#!/usr/bin/env bash
# The HA ledger's fail-over figures (issue 29, README "A ledger that survives its server"): runs faults.HaFailoverTest,
# which starts the shipped deploy/ha/ files on loopback (etcd, PostgreSQL 15 under Patroni twice, HAProxy), three
# gateway nodes and 20 SMTP sessions, and kills the primary's machine, switches over, and loses etcd under the load.
# Each run prints its "HA run" lines: how long after the death mail flowed again, the longest stretch without a 250
# in the switchover, the etcd figures, the replies and the ledger's reconciliation. Run on a quiet machine.
# Usage: bench/ha-failover.sh [runs, default 3]; appends to bench/results/<date>-ha-failover.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
out=bench/results/$(date -u +%F)-ha-failover.txt
report=target/surefire-reports/dev.ledgerpost.faults.HaFailoverTest-output.txt
{
  echo "# bench/ha-failover.sh, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), $(nproc) cores"
  for i in $(seq "$RUNS"); do
    if mvn -B -q test -Dtest=HaFailoverTest -Dsurefire.failIfNoSpecifiedTests=false >/dev/null 2>&1; then
      echo "run $i: passed"
    else
      echo "run $i: FAILED (target/surefire-reports/dev.ledgerpost.faults.HaFailoverTest.txt)"
    fi
    grep -h "^HA run" "$report" | sed 's/^/  /' || true
  done
} | tee -a "$out"
