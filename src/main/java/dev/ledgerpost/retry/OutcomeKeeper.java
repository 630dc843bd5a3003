package dev.ledgerpost.retry;

import io.vertx.core.Future;
import java.util.UUID;

/**
 * What the relay contract asks of the retry part for every known outcome (docs/design.md §1.5–§1.7), called
 * directly from any event loop: journal it, say that its settle committed, or hand it over because its
 * settle failed. The retry part can only re-persist what it is given; it never sends mail.
 */
public interface OutcomeKeeper {

  /** Appends the outcome to the journal: completes once it is fsynced, fails when the journal cannot take it. */
  Future<Void> journal(KnownOutcome outcome);

  /** The delivery part's own settle of this outcome committed: its journal record is done. */
  void settled(UUID id);

  /** The delivery part's settle failed: from now on the retry part owns the outcome. */
  void handOver(KnownOutcome outcome);
}
