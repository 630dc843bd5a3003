package dev.ledgerpost.publish.outbox;

import java.time.Duration;
import java.util.List;

/** Event-bus messages of the outbox ({@link OutboxStore}, on its relay's context): publishing, history, retention, receipts. */
public final class OutboxMessages {
  private OutboxMessages() {}

  /** Publishes the next batch of committed, unpublished rows. */
  public static final String PUBLISH = "outbox.publish";

  public record Publish(int limit) {}

  /**
   * A pass's result: it numbered {@code rows} outbox rows, whose events are {@code firstPubSeq} ..
   * {@code lastPubSeq}. It carries no event: whoever wants them reads them (the hub only while someone subscribes).
   */
  public record Published(int rows, long firstPubSeq, long lastPubSeq) {
    public static final Published NONE = new Published(0, 0, 0);
  }

  /** Published events after {@code since}, for a subscriber that resumes. */
  public static final String HISTORY = "outbox.history";

  /** {@code user} null: every event (admin); else only that user's. */
  public record History(long since, int limit, String user) {}

  /**
   * {@code prunedThrough}: events at or below it may be gone; a subscriber behind it must reset.
   * {@code scannedThrough}: the page looked at every event up to here (a per-user page holds fewer).
   */
  public record HistoryPage(List<OutboxEvent> events, long prunedThrough, long lastPubSeq, long scannedThrough) {}

  public static final String PRUNE = "outbox.prune";

  public record Prune(Duration retention, int batch) {}

  public record Pruned(int deleted) {}

  public static final String RECEIPT = "outbox.receipt";

  /**
   * A subscriber's ack of the event {@code pubSeq}. {@code user} is the subscriber's user, whose events alone it may
   * acknowledge; null for the admin token, which sees every event (docs/design.md §6.4).
   */
  public record Receipt(long pubSeq, String subscriber, String state, String user) {}

  /**
   * {@code stored}: the event exists and the subscriber may see it, so its receipt is stored (or already was);
   * false: nothing was stored, and whether the seq is another user's or nobody's is not said.
   */
  public record ReceiptStored(boolean stored) {}

  /** Published (not requested) after a commit that wrote outbox rows: this process's ({@link OutboxWake}), or another's (LISTEN). */
  public static final String WAKE = "outbox.wake";

  public record Wake() {}

  /**
   * Published (not requested) by the outbox store when PostgreSQL says some node's publisher numbered events: a
   * {@link PublishedUpTo}. Every node's hub tails the ledger on it (docs/design.md §9.3).
   */
  public static final String PUBLISHED = "outbox.published";

  /** Every event up to {@code lastPubSeq} is published. */
  public record PublishedUpTo(long lastPubSeq) {}

  /** The last pub_seq given out so far, by any node: a {@link Head} answered by a {@link PublishedUpTo}. */
  public static final String HEAD = "outbox.head";

  public record Head() {}

  /** Age of the oldest committed row not yet published. */
  public static final String LAG = "outbox.lag";

  public record Lag() {}

  public record LagSeconds(double seconds) {}
}
