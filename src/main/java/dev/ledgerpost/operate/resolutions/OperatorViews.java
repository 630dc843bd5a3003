package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.operate.capacity.CapacityGauges;
import dev.ledgerpost.operate.stale.PendingHistory;
import dev.ledgerpost.operate.stale.StaleGauges;

/**
 * What the operator endpoints read in process rather than from the ledger: the stale watch's gauges (so the
 * console shows the numbers /metrics shows) and their last hour, and the capacity watch's (readiness says when the
 * ledger's disk is nearly full). One of each per process, made by Gateway and shared by every API instance; all are
 * safe to read from any thread.
 */
public record OperatorViews(StaleGauges gauges, PendingHistory pendingHistory, CapacityGauges capacity) {}
