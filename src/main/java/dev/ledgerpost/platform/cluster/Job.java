package dev.ledgerpost.platform.cluster;

import java.util.Locale;

/**
 * The work exactly one node of a cluster does at a time (docs/design.md §9.2). Each job is an advisory lock
 * ({@link #LOCK_CLASS}, {@link #key}) held by its node's lock connection: the lock, not a row, says who leads,
 * so a node that dies (its session ends) gives its jobs up at once.
 */
public enum Job {
  /** Numbers the committed outbox rows (its row lock stays, and keeps two publishers serial anyway). */
  OUTBOX_PUBLISHER(1),
  /** Raises stale PENDING rows (its raise's WHERE keeps "once per period" on its own; the lease saves the work). */
  STALE_WATCH(2),
  /** Deletes published outbox rows past notify.retention. */
  OUTBOX_RETENTION(3),
  /** Deletes idempotency keys past api.idempotencyRetention. */
  IDEMPOTENCY_RETENTION(4),
  /** Reconciles UNKNOWN and stale PENDING rows with the smarthost's record (its proposals' unique indexes keep one per row anyway). */
  RECONCILE(5),
  /** Makes the ledger's weekly partitions ahead and drops those past ledger.retention (its DDL also takes an advisory lock). */
  LEDGER_PARTITIONS(6),
  /** Deletes webhook deliveries that ended longer than webhooks.retention ago. */
  WEBHOOK_RETENTION(7),
  /** Deletes resubmission claims past smtp.resubmission.window (docs/contract.md §1.13; SKIP LOCKED keeps two apart anyway). */
  RESUBMISSION_RETENTION(8),
  /** Deletes suppression list entries past their expires_at (every node's copy already ignores them; a bounded DELETE). */
  SUPPRESSION_EXPIRY(9),
  /** Deletes captured messages' bytes past capture.retention (docs/design.md §8.10; a bounded DELETE). */
  CAPTURE_EXPIRY(12),
  /** Deletes refused recipients (recipient_refusals) past suppression.refusalRetention (a bounded DELETE). Key 14: clear of the others' next. */
  REFUSAL_RETENTION(14),
  /** Rolls closed hours of the ledger up for the usage statistics (its writes also take an advisory lock, docs/design.md §8.12). */
  STATS_ROLLUP(15),
  /**
   * Asks the downstream Ledgerpost what became of the recipients of our rows it took (docs/design.md §8.13): one node
   * asks, so a downstream is asked once per row and pass whatever number of nodes (its facts' unique key keeps one
   * anyway). Key 16: clear of the others' next.
   */
  TRACKING_DOWNSTREAM(16);

  /** The first key of every job lock: "LP". The second is {@link #key}. */
  static final int LOCK_CLASS = 0x4C50;
  /** The first key of a node's identity lock; the second is hashtext(node id). */
  static final int NODE_LOCK_CLASS = 0x4C51;

  final int key;

  Job(int key) {
    this.key = key;
  }

  /** As it appears in the nodes table, the log and the metrics: outbox-publisher. */
  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
