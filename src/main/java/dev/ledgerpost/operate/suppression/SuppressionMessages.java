package dev.ledgerpost.operate.suppression;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** The suppression list's addresses, served on its own verticle ({@link SuppressionStore}; docs/design.md §8.8). */
public final class SuppressionMessages {
  public static final String ADD = "suppression.add";
  public static final String REMOVE = "suppression.remove";
  public static final String LIST = "suppression.list";
  public static final String PRUNE = "suppression.prune";
  public static final String IMPORT = "suppression.import";

  private SuppressionMessages() {}

  /** Where an entry came from: an operator today; bounces and smarthost refusals once tracking feeds the list (issue 30). */
  public enum Source {
    OPERATOR, BOUNCE, REFUSAL;

    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * One entry. {@code scope} is {@code global} or {@code user:<name>}; {@code address} is normalised
   * ({@link Suppressions#normalise}); {@code messageId} and {@code reply} name the ledger row and the downstream reply
   * that caused it (null for an operator's entry).
   */
  public record Entry(UUID id, String address, String scope, String reason, String category, String source, UUID messageId,
      String reply, String addedBy, OffsetDateTime addedAt, OffsetDateTime expiresAt) {}

  /**
   * Add (or replace: the same scope and address again renews it) an entry. {@code expiresAt} null: now plus
   * {@code suppression.ttl}.
   */
  public record Add(String address, String scope, String reason, String category, Source source, UUID messageId, String reply,
      String addedBy, OffsetDateTime expiresAt) {}

  /**
   * Remove one entry: {@code id}, or else the one of {@code address} in {@code scope}. {@code ownScope}, when given,
   * must be the entry's (a user's send key removes only its own entries); {@code removedBy} goes into the event.
   */
  public record Remove(UUID id, String address, String scope, String ownScope, String removedBy) {}

  /** A page of entries, by address, then scope; filters may be null. */
  public record ListQuery(String address, String scope, int limit, int offset) {}

  public record Page(List<Entry> entries, int offset, boolean more) {}

  /** Add (or renew) every entry of an import in one transaction: all or none. */
  public record Import(List<Add> entries) {}

  /** How many entries the import added, and how many it renewed (the same scope and address were listed already). */
  public record Imported(int added, int renewed) {}

  /** Delete up to {@code limit} entries past their expires_at. */
  public record Prune(int limit) {}

  public record Pruned(int deleted) {}
}
