package dev.ledgerpost.ledger;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** Event-bus messages of the outbox side of the ledger: publishing, history, retention, receipts. */
public final class OutboxMessages {
  /** Publishes the next batch of committed, unpublished rows. */
  public static final String PUBLISH = "ledger.outbox.publish";
  /** Published events after {@code since}, for a subscriber that resumes. */
  public static final String HISTORY = "ledger.outbox.history";
  public static final String PRUNE = "ledger.outbox.prune";
  public static final String RECEIPT = "ledger.outbox.receipt";
  public static final String OPERATION = "ledger.operation";
  /** Published (not requested) by the ledger when PostgreSQL says an outbox row was committed. */
  public static final String WAKE = "ledger.outbox.wake";
  /**
   * Published (not requested) by the ledger when PostgreSQL says some node's publisher numbered events: a
   * {@link PublishedUpTo}. Every node's hub tails the ledger on it (docs/design.md §9.3).
   */
  public static final String PUBLISHED = "ledger.outbox.published";
  /** The last pub_seq given out so far, by any node: a {@link Head} answered by a {@link PublishedUpTo}. */
  public static final String HEAD = "ledger.outbox.head";
  /** Age of the oldest committed row not yet published. */
  public static final String LAG = "ledger.outbox.lag";
  /** Chaos mode: hold ACCESS EXCLUSIVE locks from a separate connection. */
  public static final String CHAOS_LOCK = "ledger.chaos.lock";

  private OutboxMessages() {}

  public static Class<?>[] types() {
    return new Class<?>[] {
      Publish.class, Published.class, History.class, HistoryPage.class, Prune.class, Pruned.class, Receipt.class,
      Operation.class, OperationFacts.class, Wake.class, PublishedUpTo.class, Head.class, Lag.class, LagSeconds.class, ChaosLock.class, ChaosLocked.class
    };
  }

  public record Publish(int limit) {}

  public record Published(List<OutboxEvent> events) {}

  /** {@code user} null: every event (admin); else only that user's. */
  public record History(long since, int limit, String user) {}

  /**
   * {@code prunedThrough}: events at or below it may be gone; a subscriber behind it must reset.
   * {@code scannedThrough}: the page looked at every event up to here (a per-user page holds fewer).
   */
  public record HistoryPage(List<OutboxEvent> events, long prunedThrough, long lastPubSeq, long scannedThrough) {}

  public record Prune(Duration retention, int batch) {}

  public record Pruned(int deleted) {}

  public record Receipt(long pubSeq, String subscriber, String state) {}

  /** {@code nodeDeadAfter}: the outcomes held by nodes whose heartbeat is younger than this count as being settled. */
  public record Operation(UUID id, Duration nodeDeadAfter) {}

  public record ReceiptView(String subscriber, String state, long pubSeq, OffsetDateTime at) {}

  /**
   * What the ledger knows of one operation, for GET /api/v1/operations/{id}; {@code heldBy}: the live nodes whose
   * retry part holds its outcome (docs/design.md §9.2).
   */
  public record OperationFacts(
      LedgerMessages.MessageDetail message, int events, int publishedEvents, long lastPubSeq, List<ReceiptView> receipts,
      List<String> heldBy) {}

  public record Wake() {}

  /** Every event up to {@code lastPubSeq} is published. */
  public record PublishedUpTo(long lastPubSeq) {}

  public record Head() {}

  public record Lag() {}

  public record LagSeconds(double seconds) {}

  public record ChaosLock(java.util.List<String> tables, long millis) {}

  public record ChaosLocked(java.util.List<String> tables, long millis) {}
}
