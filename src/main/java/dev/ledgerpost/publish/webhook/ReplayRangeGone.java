package dev.ledgerpost.publish.webhook;

/**
 * A replay asked for events that retention (notify.retention) already deleted from the outbox: the API answers 409
 * with the oldest pub_seq still there. (An unknown endpoint or delivery is a NOT_FOUND
 * {@link dev.ledgerpost.platform.db.StoreException}, answered 404 by the one ledger-failure mapping.)
 */
public final class ReplayRangeGone extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final long oldestAvailable;

  /** @param pruned the last pub_seq retention deleted */
  ReplayRangeGone(long pruned) {
    super("events up to pub_seq " + pruned + " were deleted by retention (notify.retention); the oldest available is "
        + (pruned + 1) + ": replay since=" + pruned + " or later", null, false, false);
    this.oldestAvailable = pruned + 1;
  }

  public long oldestAvailable() {
    return oldestAvailable;
  }
}
