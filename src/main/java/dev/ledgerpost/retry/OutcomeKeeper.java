package dev.ledgerpost.retry;

import io.vertx.core.Future;
import java.util.UUID;

/**
 * What the relay contract asks of the retry part for every known outcome (docs/design.md §1.5–§1.7), called
 * directly from any event loop: journal it, say that its settle committed, or hand it over because its
 * settle failed. The retry part can only re-persist what it is given; it never sends mail.
 */
public interface OutcomeKeeper {

  /**
   * Appends the outcome to the journal: true once it is fsynced, false when its settle committed first
   * and it was never written ({@link #settled}); fails when the journal cannot take it.
   */
  Future<Boolean> journal(KnownOutcome outcome);

  /** The delivery part's own settle of this outcome committed: its journal record is not needed, or done. */
  void settled(UUID id);

  /** The delivery part's settle failed: from now on the retry part owns the outcome ({@code journaled}: it is on disk). */
  void handOver(KnownOutcome outcome, boolean journaled);
}
