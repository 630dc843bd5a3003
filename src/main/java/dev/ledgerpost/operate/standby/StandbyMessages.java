package dev.ledgerpost.operate.standby;

/** The standby check's address, on its own verticle ({@link StandbyStore}; docs/design.md §8.7). */
public final class StandbyMessages {
  private StandbyMessages() {}

  public static final String COUNT = "standby.count";

  /** How many synchronous standbys the ledger's server has now. */
  public record StandbyQuery() {}

  /**
   * The answer: the ledger's role ({@code current_user}), whether it may see the replication state (superuser, or
   * the privileges of pg_read_all_stats, which pg_monitor has: any other role sees each standby's row with the state
   * NULL), and the standbys in {@code sync} or {@code quorum} state (0 when it may not see them).
   */
  public record Standbys(String role, boolean visible, long synchronous) {}
}
