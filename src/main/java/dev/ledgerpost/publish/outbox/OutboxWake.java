package dev.ledgerpost.publish.outbox;

import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Context;
import io.vertx.sqlclient.Pool;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Wakes outbox relays after a ledger commit wrote an outbox row: this process's relay over the event
 * bus, and relays in other processes (LISTEN ledgerpost_outbox) with a NOTIFY, sent outside the
 * ledger's transactions so that their commits never queue on PostgreSQL's notification lock. Both are
 * coalesced: one wake-up per {@link #LOCAL_MILLIS} and one NOTIFY per {@link #COALESCE_MILLIS}, however
 * many commits (from however many event loops) happened meanwhile. A lost wake-up only delays an
 * event: every relay also polls.
 */
final class OutboxWake {
  /** The channel of the NOTIFY to other processes' relays (LISTEN in {@link OutboxStore}). */
  static final String CHANNEL = "ledgerpost_outbox";
  static final long COALESCE_MILLIS = 50;
  static final long LOCAL_MILLIS = 5;
  private static final OutboxMessages.Wake WAKE = new OutboxMessages.Wake();

  private final Context context;
  private final Pool pool;
  private final Bus bus;
  private final AtomicBoolean wakeScheduled = new AtomicBoolean();
  private final AtomicBoolean notifyScheduled = new AtomicBoolean();

  OutboxWake(Context context, Pool pool, Bus bus) {
    this.context = context;
    this.pool = pool;
    this.bus = bus;
  }

  /** After a commit that wrote outbox rows; from any thread. */
  void committed() {
    if (wakeScheduled.compareAndSet(false, true)) {
      context.runOnContext(v -> context.owner().setTimer(LOCAL_MILLIS, t -> {
        wakeScheduled.set(false);
        bus.publish(OutboxMessages.WAKE, WAKE);
      }));
    }
    if (notifyScheduled.compareAndSet(false, true)) {
      context.runOnContext(v -> context.owner().setTimer(COALESCE_MILLIS, t -> {
        notifyScheduled.set(false);
        pool.query("NOTIFY " + CHANNEL).execute();
      }));
    }
  }
}
