package dev.ledgerpost.publish.hub;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.publish.outbox.OutboxEvent;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.publish.outbox.OutboxMessages.History;
import dev.ledgerpost.publish.outbox.OutboxMessages.HistoryPage;
import dev.ledgerpost.publish.outbox.OutboxMessages.Published;
import dev.ledgerpost.publish.outbox.OutboxMessages.PublishedUpTo;
import dev.ledgerpost.publish.outbox.OutboxVerticle;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every published event, of whichever node published it, handed to the hub once each, in pub_seq order and
 * without a gap (docs/design.md §9.3). pub_seq is given out under the publisher's row lock and committed in
 * order, so "pub_seq > cursor" is a safe cursor on the ledger. Told by this node's publisher (its pass's last number:
 * the pass reads no event back, V118), the publisher's NOTIFY to every node, and a poll; the events are read from the
 * ledger. With nobody subscribed the feed only moves its cursor (from
 * the notification's number or one tiny query): no event is read for nobody.
 *
 * <p>Runs on the hub's context only.
 */
final class EventFeed {
  private static final Logger LOG = LoggerFactory.getLogger(EventFeed.class);
  private static final int PAGE = 500;

  private final Vertx vertx;
  private final Bus bus;
  private final BooleanSupplier anyoneListening;
  private final Consumer<OutboxEvent> offer;
  /** Told the new cursor when events the feed never handed out were pruned from under it. */
  private final LongConsumer skippedPruned;
  private long cursor;
  private boolean reading;
  private boolean readAgain;
  private long lastFailureLog;

  EventFeed(Vertx vertx, BooleanSupplier anyoneListening, Consumer<OutboxEvent> offer, LongConsumer skippedPruned) {
    this.vertx = vertx;
    this.bus = Bus.of(vertx);
    this.anyoneListening = anyoneListening;
    this.offer = offer;
    this.skippedPruned = skippedPruned;
  }

  /** Every event up to this one was handed out (or passed while nobody listened). */
  long cursor() {
    return cursor;
  }

  /** Starts at the ledger's newest event: a feed hands out what is published from now on. */
  Future<Void> start(Duration poll) {
    return bus.request(OutboxMessages.HEAD, new OutboxMessages.Head(), PublishedUpTo.class).map(head -> {
      cursor = head.lastPubSeq();
      // This node's publisher numbered events: like any node's notice, read only if someone listens.
      vertx.eventBus().<Published>localConsumer(OutboxVerticle.EVENTS, m -> publishedUpTo(m.body().lastPubSeq()));
      vertx.eventBus().<PublishedUpTo>localConsumer(OutboxMessages.PUBLISHED, m -> publishedUpTo(m.body().lastPubSeq()));
      vertx.setPeriodic(poll.toMillis(), t -> poll());
      return null;
    });
  }

  /** Some node published every event up to {@code last}. */
  private void publishedUpTo(long last) {
    if (last <= cursor) {
      return;
    }
    if (anyoneListening.getAsBoolean()) {
      read();
    } else {
      cursor = last;
    }
  }

  /** In case a notification was lost (or LISTEN was down): where the ledger is now. */
  private void poll() {
    if (anyoneListening.getAsBoolean()) {
      read();
      return;
    }
    bus.request(OutboxMessages.HEAD, new OutboxMessages.Head(), PublishedUpTo.class)
        .onSuccess(head -> publishedUpTo(head.lastPubSeq()))
        .onFailure(this::failed);
  }

  /**
   * Hands out the events that follow the cursor, in order; false if they do not reach it (a gap before them),
   * so that the caller reads the gap from the ledger.
   */
  private boolean handOut(List<OutboxEvent> events) {
    for (OutboxEvent e : events) {
      if (e.pubSeq() <= cursor) {
        continue;
      }
      if (e.pubSeq() != cursor + 1) {
        return false;
      }
      cursor = e.pubSeq();
      offer.accept(e);
    }
    return true;
  }

  /** Reads the events after the cursor from the ledger, page by page, until it has them all. Never overlaps itself. */
  private void read() {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = true;
    readAgain = false;
    bus.request(OutboxMessages.HISTORY, new History(cursor, PAGE, null), HistoryPage.class).onComplete(ar -> {
      reading = false;
      if (ar.failed()) {
        failed(ar.cause()); // the next notification or poll reads again
        return;
      }
      HistoryPage page = ar.result();
      if (cursor < page.prunedThrough()) {
        // The hub was behind by more than notify.retention: those events are gone for every node.
        LOG.warn("events {}..{} were deleted by retention before this node's hub handed them out", cursor + 1,
            page.prunedThrough());
        cursor = page.prunedThrough();
        skippedPruned.accept(cursor);
        read();
        return;
      }
      handOut(page.events());
      if (page.scannedThrough() < page.lastPubSeq() || readAgain) {
        read();
      }
    });
  }

  private void failed(Throwable e) {
    long now = System.currentTimeMillis();
    if (now - lastFailureLog > 60_000) {
      lastFailureLog = now;
      LOG.warn("the hub cannot read published events yet: {}", e.getMessage());
    }
  }
}
