package dev.ledgerpost.stale;

/**
 * The stale watch's gauges as plain values, kept current by its scans (the oldest age also moves with
 * the clock between scans). The metrics part binds them as {@code ledgerpost_pending_messages},
 * {@code ledgerpost_pending_oldest_age_seconds} and {@code ledgerpost_pending_stale_messages}.
 */
public interface StaleGauges {
  /** Messages in PENDING, whoever holds them. */
  long pendingMessages();

  /** Age of the oldest PENDING message; 0 when there is none. */
  long oldestPendingAgeSeconds();

  /** PENDING messages older than the threshold that the retry part does not hold. */
  long stalePendingMessages();

  /** Completed scans since start; tells a reader that a scan happened. */
  long scans();
}
