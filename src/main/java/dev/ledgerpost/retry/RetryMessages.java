package dev.ledgerpost.retry;

import java.util.Set;
import java.util.UUID;

/** The retry part's event-bus addresses and their records. */
public final class RetryMessages {
  /** Request: a {@link KnownOutcome}; the {@link Journaled} reply comes only after the journal's fsync. */
  public static final String JOURNAL = "retry.journal";
  /** One-way notice: an {@link OutcomeDone}, the settle of a journaled outcome committed. */
  public static final String DONE = "retry.done";
  /** Request: a {@link HeldQuery}; the reply lists every outcome the retry part still holds. */
  public static final String HELD = "retry.held";

  private RetryMessages() {}

  public record Journaled(UUID id) {}

  public record OutcomeDone(UUID id, int version) {}

  public record HeldQuery() {}

  /** Outcomes known to the retry part and not yet in the ledger: the stale watch leaves these alone. */
  public record HeldOutcomes(Set<UUID> ids) {}
}
