package dev.ledgerpost.publish.outbox;

import dev.ledgerpost.platform.part.Part;
import java.util.Optional;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.publish.outbox.OutboxMessages.Publish;
import dev.ledgerpost.publish.outbox.OutboxMessages.Published;
import dev.ledgerpost.platform.observability.ThrottledWarning;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox relay: numbers committed outbox rows in publish order, woken by PostgreSQL's NOTIFY and by a
 * poll (the source of truth), and hands what it published to this node's hub. One node of a cluster
 * publishes at a time ({@link Job#OUTBOX_PUBLISHER}); every node's hub tails the published events from the
 * ledger (docs/design.md §9.3). It never changes a message fact; a failure here only delays notifications. Its SQL
 * ({@link OutboxStore}) runs on this verticle's context, over the shared {@link Database}.
 */
public final class OutboxVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxVerticle.class);
  /** Where published events go; the hub listens here. */
  public static final String EVENTS = "outbox.events";
  private static final int BATCH = 500;

  private final NodeServices node;
  private final Database db;
  private OutboxStore store;
  private volatile double lagSeconds;
  private Bus bus;
  /** Between the starts of two publish passes, unless the first was full. */
  static final long MIN_PASS_MILLIS = 20;
  private PacedPass passes;
  private JobSchedule schedule;
  private final ThrottledWarning failures = new ThrottledWarning(LOG);

  /** The outbox relay as a part of the gateway: its name is its addresses' prefix. */
  public static Part part() {
    return Part.of("outbox", a -> a.deploy(new OutboxVerticle(a.get(NodeServices.class), a.get(Database.class))),
        api -> Optional.empty());
  }

  public OutboxVerticle(NodeServices node, Database db) {
    this.node = node;
    this.db = db;
  }

  @Override
  public Future<?> start() {
    bus = Bus.of(vertx);
    store = new OutboxStore(db, context);
    schedule = new JobSchedule(vertx, node.leadership());
    return store.started().map(listening -> { // the first pass after the LISTEN is up: no wake-up in between is missed
      passes = new PacedPass(vertx, MIN_PASS_MILLIS, true,
          () -> !schedule.stopped() && node.leadership().leads(Job.OUTBOX_PUBLISHER), this::pass);
      vertx.eventBus().localConsumer(OutboxMessages.WAKE, m -> relay());
      Duration poll = node.config().notifications().pollInterval();
      schedule.every(poll, this::measureLag); // every node's gauge
      schedule.lead(Job.OUTBOX_PUBLISHER, poll, this::relay); // the poll is the source of truth; a new leader publishes at once
      node.metrics().gauge("ledgerpost.outbox.lag.seconds", "Age of the oldest committed outbox event not yet published",
          () -> lagSeconds);
      return null;
    });
  }

  /**
   * Runs one publish pass now, or right after the one in progress (wake-ups coalesce), but passes start
   * at most every {@link #MIN_PASS_MILLIS}: under load a pass then takes what several commits wrote, and
   * the ledger spends less per event on publishing it. A full pass is followed at once.
   */
  public void relay() {
    passes.run();
  }

  /** One publish pass; answers whether it was full (then the next follows at once). */
  private Future<Boolean> pass() {
    return bus.request(OutboxMessages.PUBLISH, new Publish(BATCH), Published.class).map(published -> {
      if (published.rows() > 0) {
        bus.publish(EVENTS, published);
      }
      return published.rows() >= BATCH;
    }).onFailure(e -> failures.warn("outbox relay cannot publish yet: {}", e.getMessage())); // the poll retries every interval
  }

  private void measureLag() {
    bus.request(OutboxMessages.LAG, new OutboxMessages.Lag(), OutboxMessages.LagSeconds.class)
        .onSuccess(l -> lagSeconds = l.seconds());
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    return store.stop();
  }
}
