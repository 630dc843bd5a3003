package dev.ledgerpost.ledger;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.pubsub.PgSubscriber;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the PostgreSQL side: starts the embedded server when no URL is configured, migrates the
 * schema, holds the pool and serves the ledger's event-bus addresses.
 */
public final class LedgerVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerVerticle.class);

  private final GatewayConfig.Ledger config;
  private final Map<String, AtomicLong> retries = new ConcurrentHashMap<>();
  private EmbeddedDatabase embedded;
  private static final OutboxMessages.Wake WAKE = new OutboxMessages.Wake();

  private Pool pool;
  private LedgerWriter writer;
  private PgSubscriber subscriber;
  private DatabaseTarget target;

  private final GatewayMetrics metrics;
  /** This gateway's node.id, recorded on every row it opens. */
  private final String nodeId;

  public LedgerVerticle(GatewayConfig.Ledger config, String nodeId, GatewayMetrics metrics) {
    this.config = config;
    this.nodeId = nodeId;
    this.metrics = metrics;
  }

  @Override
  public Future<?> start() {
    return vertx.executeBlocking(() -> {
          DatabaseTarget t;
          if (config.embedded()) {
            embedded = EmbeddedDatabase.start(Path.of(config.dataDir()), config.embeddedPort());
            t = DatabaseTarget.embedded(embedded.port(), config.lockTimeout());
          } else {
            t = DatabaseTarget.fromUrl(config.url(), config.lockTimeout());
            LOG.info("ledger on {}", t.displayUrl());
          }
          Migrations.migrate(t);
          return t;
        })
        .compose(t -> {
          target = t;
          pool = PgBuilder.pool()
              .with(new PoolOptions().setMaxSize(config.poolSize()))
              .connectingTo(t.options())
              .using(vertx)
              .build();
          return warnIfNotDurable();
        })
        .map(x -> {
          TransactionPolicy.Listener counting = (kind, cause, next) -> {
            retries.computeIfAbsent(cause, c -> new AtomicLong()).incrementAndGet();
            metrics.ledgerRetry(cause);
          };
          Ledger ledger = new Ledger(pool);
          Bus bus = Bus.of(vertx);
          new Resolutions(pool, new TransactionPolicy(vertx, counting)).serve(bus);
          new StaleRows(pool, new TransactionPolicy(vertx, counting)).serve(bus);
          new ReconcileRows(pool, new TransactionPolicy(vertx, counting)).serve(bus);
          OutboxWake wake = new OutboxWake(context, pool, bus);
          writer = new LedgerWriter(context, pool, nodeId, counting, config.lockTimeout(), metrics, wake::committed);
          // The hot path calls the writer directly; the bus addresses serve the retry part, tools and tests.
          bus.serve(LedgerMessages.OPEN, Open.class, writer::open);
          bus.serve(LedgerMessages.SETTLE, Settle.class, writer::settle);
          bus.serve(LedgerMessages.LIST, ListQuery.class, ledger::list);
          bus.serve(LedgerMessages.GET, Get.class, ledger::get);
          bus.serve(LedgerMessages.PING, Ping.class, p -> ledger.ping().map(v -> p));
          new IdempotencyStore(pool, nodeId, new TransactionPolicy(vertx, counting), metrics, wake::committed).serve(bus);
          OutboxStore outbox = new OutboxStore(pool);
          bus.serve(OutboxMessages.PUBLISH, OutboxMessages.Publish.class, p -> outbox.publish(p.limit()));
          bus.serve(OutboxMessages.HISTORY, OutboxMessages.History.class, outbox::history);
          bus.serve(OutboxMessages.PRUNE, OutboxMessages.Prune.class, outbox::prune);
          bus.serve(OutboxMessages.RECEIPT, OutboxMessages.Receipt.class, r -> outbox.receipt(r).map(v -> r));
          bus.serve(OutboxMessages.OPERATION, OutboxMessages.Operation.class, o -> outbox.operation(ledger, o));
          bus.serve(OutboxMessages.LAG, OutboxMessages.Lag.class, l -> outbox.lag());
          bus.serve(OutboxMessages.HEAD, OutboxMessages.Head.class, h -> outbox.head());
          ChaosLocks chaos = new ChaosLocks(vertx, target.options());
          bus.serve(OutboxMessages.CHAOS_LOCK, OutboxMessages.ChaosLock.class, chaos::hold);
          return null;
        })
        .compose(x -> listen());
  }

  /**
   * LISTEN for committed outbox rows (the publisher's wake-up) and for published events (every hub's). A
   * notification is only a wake-up: the relay and the hubs poll as well, so a lost notification (or a
   * subscriber down while PostgreSQL restarts) delays events, never loses them.
   */
  private Future<Void> listen() {
    subscriber = PgSubscriber.subscriber(vertx, target.options()).reconnectPolicy(retries -> 1000L);
    Bus bus = Bus.of(vertx);
    subscriber.channel("ledgerpost_outbox").handler(payload -> bus.publish(OutboxMessages.WAKE, WAKE));
    subscriber.channel(OutboxStore.PUBLISHED_CHANNEL).handler(payload -> {
      try {
        bus.publish(OutboxMessages.PUBLISHED, new OutboxMessages.PublishedUpTo(Long.parseLong(payload)));
      } catch (NumberFormatException e) {
        LOG.debug("ignoring a {} notification with payload {}", OutboxStore.PUBLISHED_CHANNEL, payload);
      }
    });
    return subscriber.connect().recover(e -> {
      LOG.warn("cannot LISTEN for outbox notifications ({}); the outbox relay polls only", e.getMessage());
      return Future.succeededFuture();
    });
  }

  /** A commit must mean durable; an external server that says otherwise is reported, not changed. */
  private Future<Void> warnIfNotDurable() {
    return pool.query("SELECT current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fs").execute()
        .map(rows -> {
          Row row = rows.iterator().next();
          String sc = row.getString("sc");
          String fs = row.getString("fs");
          if (!"on".equals(fs) || "off".equals(sc) || "local".equals(sc)) {
            LOG.warn("ledger server runs with synchronous_commit={} fsync={}: a crash can lose committed ledger rows", sc, fs);
          }
          return null;
        });
  }

  @Override
  public Future<?> stop() {
    Future<Void> unlistened = subscriber == null ? Future.succeededFuture() : subscriber.close();
    Future<Void> closed = unlistened.eventually(() -> pool == null ? Future.succeededFuture() : pool.close());
    return closed.eventually(() -> embedded == null
        ? Future.succeededFuture()
        : vertx.executeBlocking(() -> {
          embedded.close();
          return null;
        }));
  }

  /** Whole-transaction retries so far, by SQLSTATE (or "connection"). */
  public Map<String, Long> retries() {
    Map<String, Long> copy = new java.util.TreeMap<>();
    retries.forEach((k, v) -> copy.put(k, v.get()));
    return copy;
  }

  /** Opens and settles, group-committed; callable from any event loop once this verticle has started. */
  public LedgerWriter writer() {
    return writer;
  }

  /** For tests and the operator log: where the ledger lives. */
  public DatabaseTarget target() {
    return target;
  }
}
