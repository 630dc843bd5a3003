package dev.ledgerpost.relay.retry;

import io.vertx.core.Future;
import java.util.UUID;

/**
 * What the relay contract asks of the retry part for every known outcome (docs/contract.md §1.5–§1.7), called
 * directly from any event loop: journal it, say that its settle committed, or hand it over because its
 * settle failed. The retry part can only re-persist what it is given; it never sends mail.
 */
public interface OutcomeKeeper {

  /**
   * The relay contract is about to open this row and send its body: until its settle commits ({@link #settled}) or it
   * is handed over ({@link #handOver}), the row is in delivery on this node, and neither the stale watch nor the
   * reconcile job looks at it (docs/design.md §8.1). Called before the open, so no moment exists at which the row is
   * committed and nobody says it is being settled.
   */
  void delivering(UUID id);

  /**
   * The contract ended without a settle or a hand-over: its open opened nothing because an earlier row holds its
   * resubmission claim (docs/contract.md §1.13), or a bug. The row is no longer in delivery.
   */
  void deliveryAbandoned(UUID id);

  /**
   * Appends the outcome to the journal: true once it is fsynced, false when its settle committed first
   * and it was never written ({@link #settled}); fails when the journal cannot take it.
   */
  Future<Boolean> journal(KnownOutcome outcome);

  /** The delivery part's own settle of this outcome committed: its journal record is not needed, or done; its delivery ended. */
  void settled(UUID id);

  /**
   * The delivery part's settle failed: from now on the retry part owns the outcome ({@code journaled}: it is on disk).
   * Its delivery ends once the retry part holds it, so it is always one or the other.
   */
  void handOver(KnownOutcome outcome, boolean journaled);
}
