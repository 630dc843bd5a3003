package dev.ledgerpost.relay.retry;

import java.util.Set;
import java.util.UUID;

/** The retry part's event-bus address and its records; the relay contract calls it directly ({@link OutcomeKeeper}). */
public final class RetryMessages {
  /** Request: a {@link HeldQuery}; the reply lists every outcome the retry part still holds. */
  public static final String HELD = "retry.held";

  private RetryMessages() {}

  public record HeldQuery() {}

  /**
   * Outcomes known to the retry part and not yet in the ledger ({@code ids}), and the rows the relay contract of this
   * node is delivering now ({@code delivering}: opened or about to be, not yet settled nor handed over). The stale
   * watch and the reconcile job leave both alone; only {@code ids} are "retrying" (the operation status).
   */
  public record HeldOutcomes(Set<UUID> ids, Set<UUID> delivering) {
    /** Both: every row this node is settling, one way or the other. */
    public Set<UUID> all() {
      Set<UUID> all = new java.util.HashSet<>(ids);
      all.addAll(delivering);
      return Set.copyOf(all);
    }
  }
}
