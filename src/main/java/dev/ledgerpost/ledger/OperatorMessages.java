package dev.ledgerpost.ledger;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/** The ledger's addresses for operators and the stale watch: manual resolution, stale rows, stale raises. */
public final class OperatorMessages {
  public static final String RESOLVE = "ledger.resolve";
  public static final String STALE = "ledger.stale";
  public static final String RAISE_STALE = "ledger.raiseStale";
  public static final String OPEN_COUNTS = "ledger.openCounts";
  public static final String OPEN_ROWS = "ledger.openRows";

  private OperatorMessages() {}

  public static Class<?>[] types() {
    return new Class<?>[] {Resolve.class, Resolved.class, StaleQuery.class, StaleReport.class, RaiseStale.class,
        StaleRaised.class, OpenCountsQuery.class, OpenCounts.class, OpenRowsQuery.class, OpenRows.class};
  }

  /** What an operator found out about a message the gateway could not settle. */
  public enum ResolutionOutcome {
    DELIVERED(MessageStatus.RESOLVED_DELIVERED),
    NOT_DELIVERED(MessageStatus.RESOLVED_NOT_DELIVERED);

    private final MessageStatus status;

    ResolutionOutcome(MessageStatus status) {
      this.status = status;
    }

    public MessageStatus status() {
      return status;
    }
  }

  /**
   * Closes a PENDING or UNKNOWN message. {@code expectedVersion} (optional) refuses the resolution
   * when the row changed since the operator looked at it.
   */
  public record Resolve(UUID id, ResolutionOutcome outcome, String operator, String note, Integer expectedVersion) {}

  public record Resolved(UUID id, MessageStatus previousStatus, MessageStatus status, int version, ResolutionOutcome outcome,
      String operator, String note, OffsetDateTime resolvedAt) {}

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
      int raises, OffsetDateTime lastRaisedAt) {}

  /** {@code oldestPendingAt} is null when nothing is PENDING; {@code stale} counts past the cutoff and not excluded. */
  public record StaleReport(long pending, OffsetDateTime oldestPendingAt, long stale, List<StaleRow> rows) {}

  /** Raises one row unless it was raised less than {@code period} before {@code now} or is no longer PENDING. */
  public record RaiseStale(UUID id, OffsetDateTime now, Duration period) {}

  /** The ledger-wide gauges' query (docs/design.md §8.1). */
  public record OpenCountsQuery() {}

  /** PENDING rows, the oldest one's received_at (null when none), UNKNOWN rows. */
  public record OpenCounts(long pending, OffsetDateTime oldestPendingAt, long unknown) {}

  /**
   * The rows waiting for an operator, oldest first: PENDING rows received before {@code pendingCutoff} except
   * {@code excluded} (when {@code pending}), and UNKNOWN rows (when {@code unknown}); narrowed by the optional
   * sender, and received at or after {@code since} and before {@code until}. What the console's "needs
   * attention" list shows and what a bulk resolution resolves.
   */
  public record OpenRowsQuery(boolean pending, boolean unknown, String sender, OffsetDateTime since, OffsetDateTime until,
      OffsetDateTime pendingCutoff, Set<UUID> excluded, Duration nodeDeadAfter, int limit) {}

  public record OpenRow(UUID id, MessageStatus status, int version, String messageIdHeader, String mailFrom,
      OffsetDateTime receivedAt, int staleRaises, OffsetDateTime lastRaisedAt) {}

  /** {@code matching} counts every row the query matches; {@code rows} holds the first {@code limit} of them. */
  public record OpenRows(long matching, List<OpenRow> rows) {}

  /** {@code raised} false: nothing written (raised already this period, or settled meanwhile). */
  public record StaleRaised(UUID id, boolean raised, int raise, String messageIdHeader, OffsetDateTime receivedAt) {}
}
