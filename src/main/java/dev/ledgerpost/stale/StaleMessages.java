package dev.ledgerpost.stale;

import dev.ledgerpost.ledger.OperatorMessages.StaleRow;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;

/** The stale watch's address: the list the API and the CLI show. */
public final class StaleMessages {
  public static final String LIST = "stale.list";

  private StaleMessages() {}

  public static Class<?>[] types() {
    return new Class<?>[] {StaleListQuery.class, StaleList.class};
  }

  public record StaleListQuery(int limit) {}

  /** Stale rows as of {@code asOf} (the watch's clock), oldest first. */
  public record StaleList(Duration threshold, OffsetDateTime asOf, long pending, long stale, List<StaleRow> rows) {}
}
