package dev.ledgerpost.operate.stale;

import dev.ledgerpost.ledger.MessageStatus;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The stale watch's addresses: the list the API and the CLI show and what needs an operator's attention, served by
 * the watch; and its SQL's ({@link StaleRows}, on the same context): stale rows, stale raises, the gauges' counts,
 * the rows waiting for an operator.
 */
public final class StaleMessages {
  private StaleMessages() {}

  public static final String LIST = "stale.list";

  public record StaleListQuery(int limit) {}

  /** Stale rows as of {@code asOf} (the watch's clock), oldest first. */
  public record StaleList(Duration threshold, OffsetDateTime asOf, long pending, long stale, List<StaleRow> rows) {}

  public static final String ATTENTION = "stale.attention";

  /**
   * Stale PENDING rows (as the watch sees them: past the threshold by its clock, not held by the retry part) and
   * UNKNOWN rows; {@code status} null for both, else PENDING or UNKNOWN only. The other filters are optional.
   */
  public record AttentionQuery(MessageStatus status, String sender, OffsetDateTime since, OffsetDateTime until, int limit) {}

  /** Oldest first, as of {@code asOf} (the watch's clock); {@code matching} counts them all, {@code rows} the first. */
  public record Attention(Duration threshold, OffsetDateTime asOf, long matching, List<OpenRow> rows) {}

  public static final String STALE = "stale.report";

  /**
   * PENDING rows received before {@code cutoff}, except {@code excluded} (outcomes this node's retry part holds)
   * and the outcomes held by every node whose heartbeat is younger than {@code nodeDeadAfter} (docs/design.md §9.2).
   * With {@code raiseDueBefore} only rows not raised since then are listed (the watch's scan); without
   * it, all of them (the API). The counts always cover every PENDING row.
   */
  public record StaleQuery(OffsetDateTime cutoff, OffsetDateTime raiseDueBefore, Set<UUID> excluded, Duration nodeDeadAfter,
      int limit) {}

  /** Deliberately without recipient data: the watch must keep working while the recipients table is locked. */
  public record StaleRow(UUID id, int version, String messageIdHeader, String mailFrom, OffsetDateTime receivedAt,
      int raises, OffsetDateTime lastRaisedAt, int clientsWaiting) {}

  /** {@code oldestPendingAt} is null when nothing is PENDING; {@code stale} counts past the cutoff and not excluded. */
  public record StaleReport(long pending, OffsetDateTime oldestPendingAt, long stale, List<StaleRow> rows) {}

  public static final String RAISE_STALE = "stale.raise";

  /** Raises one row unless it was raised less than {@code period} before {@code now} or is no longer PENDING. */
  public record RaiseStale(UUID id, OffsetDateTime now, Duration period) {}

  public static final String OPEN_COUNTS = "stale.openCounts";

  /** The ledger-wide gauges' query (docs/design.md §8.1). */
  public record OpenCountsQuery() {}

  /** PENDING rows, the oldest one's received_at (null when none), UNKNOWN rows. */
  public record OpenCounts(long pending, OffsetDateTime oldestPendingAt, long unknown) {}

  /** {@code raised} false: nothing written (raised already this period, or settled meanwhile). */
  public record StaleRaised(UUID id, boolean raised, int raise, String messageIdHeader, OffsetDateTime receivedAt,
      int clientsWaiting) {}

  public static final String OPEN_ROWS = "stale.openRows";

  /**
   * The rows waiting for an operator, oldest first: PENDING rows received before {@code pendingCutoff} except
   * {@code excluded} (when {@code pending}), and UNKNOWN rows (when {@code unknown}); narrowed by the optional
   * sender, and received at or after {@code since} and before {@code until}. What the console's "needs
   * attention" list shows and what a bulk resolution resolves.
   */
  public record OpenRowsQuery(boolean pending, boolean unknown, String sender, OffsetDateTime since, OffsetDateTime until,
      OffsetDateTime pendingCutoff, Set<UUID> excluded, Duration nodeDeadAfter, int limit) {}

  /**
   * {@code clientsWaiting}: the client retries of this row that were held (451 4.4.2) because nobody knows whether it
   * was delivered (docs/contract.md §1.13): someone is waiting on its resolution.
   */
  public record OpenRow(UUID id, MessageStatus status, int version, String messageIdHeader, String mailFrom,
      OffsetDateTime receivedAt, int staleRaises, OffsetDateTime lastRaisedAt, int clientsWaiting) {}

  /** {@code matching} counts every row the query matches; {@code rows} holds the first {@code limit} of them. */
  public record OpenRows(long matching, List<OpenRow> rows) {}
}
