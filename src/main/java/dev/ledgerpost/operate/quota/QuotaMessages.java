package dev.ledgerpost.operate.quota;

import java.time.Instant;
import java.util.List;

/** The quota part's address (docs/design.md §8.9 "Quotas") beside the records it carries. */
public final class QuotaMessages {
  private QuotaMessages() {}

  /** The counter rows as the ledger holds them now: one user's ({@code user}), or every row of today ({@code user} null). */
  public static final String USAGE = "quota.usage";

  public record UsageQuery(String user) {}

  /**
   * One user's counter row: the hour and the day it last counted in, and how many messages it accepted and refused in
   * each. A window that is not the current one (by the gateway's clock) counts as 0 used; see {@link QuotaGate#current}.
   */
  public record Usage(String user, Instant hourStart, long hourUsed, long hourRefused, Instant dayStart, long dayUsed,
      long dayRefused) {}

  public record UsageList(List<Usage> rows) {}
}
