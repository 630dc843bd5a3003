package dev.ledgerpost.stale;

import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.ledger.OperatorMessages.OpenRow;
import dev.ledgerpost.ledger.OperatorMessages.StaleRow;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;

/** The stale watch's addresses: the list the API and the CLI show, and what needs an operator's attention. */
public final class StaleMessages {
  public static final String LIST = "stale.list";
  public static final String ATTENTION = "stale.attention";

  private StaleMessages() {}

  public static Class<?>[] types() {
    return new Class<?>[] {StaleListQuery.class, StaleList.class, AttentionQuery.class, Attention.class};
  }

  public record StaleListQuery(int limit) {}

  /** Stale rows as of {@code asOf} (the watch's clock), oldest first. */
  public record StaleList(Duration threshold, OffsetDateTime asOf, long pending, long stale, List<StaleRow> rows) {}

  /**
   * Stale PENDING rows (as the watch sees them: past the threshold by its clock, not held by the retry part) and
   * UNKNOWN rows; {@code status} null for both, else PENDING or UNKNOWN only. The other filters are optional.
   */
  public record AttentionQuery(MessageStatus status, String sender, OffsetDateTime since, OffsetDateTime until, int limit) {}

  /** Oldest first, as of {@code asOf} (the watch's clock); {@code matching} counts them all, {@code rows} the first. */
  public record Attention(Duration threshold, OffsetDateTime asOf, long matching, List<OpenRow> rows) {}
}
