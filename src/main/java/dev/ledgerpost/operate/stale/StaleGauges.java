package dev.ledgerpost.operate.stale;

/**
 * The stale watch's gauges as plain values. Pending and unknown counts come from a cheap indexed query run
 * every second while the gauges are being read (and by every scan); the stale count from the scans. A read
 * never waits for the database: it returns the last values (the oldest age moves with the clock between
 * queries). The metrics part binds them as {@code ledgerpost_pending_messages},
 * {@code ledgerpost_pending_oldest_age_seconds}, {@code ledgerpost_pending_stale_messages} and
 * {@code ledgerpost_unknown_messages}; every node reports the same ledger-wide values (docs/design.md §8.1).
 */
public interface StaleGauges {
  /** Messages in PENDING, whoever holds them. */
  long pendingMessages();

  /** Age of the oldest PENDING message; 0 when there is none. */
  long oldestPendingAgeSeconds();

  /** PENDING messages older than the threshold that the retry part does not hold. */
  long stalePendingMessages();

  /** Messages whose outcome is UNKNOWN: they wait for an operator's resolution. */
  long unknownMessages();

  /** Completed scans since start; tells a reader that a scan happened. */
  long scans();
}
