package dev.ledgerpost.ledger;

import dev.ledgerpost.bus.Bus;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;

/**
 * Wakes outbox relays after a ledger commit wrote an outbox row: this process's relay at once over the
 * event bus, and relays in other processes (LISTEN ledgerpost_outbox) with one NOTIFY per
 * {@link #COALESCE_MILLIS}, sent outside the ledger's transactions so that their commits never queue
 * on PostgreSQL's notification lock. A lost wake-up only delays an event: every relay also polls.
 */
final class OutboxWake {
  static final long COALESCE_MILLIS = 50;
  private static final OutboxMessages.Wake WAKE = new OutboxMessages.Wake();

  private final Vertx vertx;
  private final Pool pool;
  private final Bus bus;
  private boolean notifyScheduled;

  OutboxWake(Vertx vertx, Pool pool, Bus bus) {
    this.vertx = vertx;
    this.pool = pool;
    this.bus = bus;
  }

  /** Called on the ledger verticle's event loop after a commit. */
  void committed() {
    bus.publish(OutboxMessages.WAKE, WAKE);
    if (!notifyScheduled) {
      notifyScheduled = true;
      vertx.setTimer(COALESCE_MILLIS, t -> {
        notifyScheduled = false;
        pool.query("NOTIFY ledgerpost_outbox").execute();
      });
    }
  }
}
