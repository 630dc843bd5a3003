package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.db.DatabaseTarget;
import dev.ledgerpost.ledger.db.EmbeddedDatabase;
import dev.ledgerpost.ledger.db.TransactionPolicy;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the PostgreSQL side: starts the embedded server when no URL is configured, migrates the schema, holds
 * the one pool, serves the ledger's own event-bus addresses, and starts the other parts' stores over the pool
 * ({@link LedgerStore}) on its context.
 */
public final class LedgerVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerVerticle.class);

  private final GatewayConfig.Ledger config;
  private final Map<String, AtomicLong> retries = new ConcurrentHashMap<>();
  private EmbeddedDatabase embedded;

  private Pool pool;
  private LedgerWriter writer;
  private DatabaseTarget target;
  private LedgerAccess access;

  private final GatewayMetrics metrics;
  /** This gateway's node.id, recorded on every row it opens. */
  private final String nodeId;
  /** The other parts' SQL, made in this order (stopped in reverse). */
  private final List<Function<LedgerAccess, LedgerStore>> stores;
  private final List<LedgerStore> started = new ArrayList<>();

  public LedgerVerticle(GatewayConfig.Ledger config, String nodeId, GatewayMetrics metrics,
      List<Function<LedgerAccess, LedgerStore>> stores) {
    this.config = config;
    this.nodeId = nodeId;
    this.metrics = metrics;
    this.stores = List.copyOf(stores);
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
          makeWeeksAhead(t);
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
          access = new LedgerAccess(context, pool, target.options(), nodeId, new TransactionPolicy(vertx, counting), metrics,
              new CopyOnWriteArrayList<>());
          Ledger ledger = access.reads();
          Bus bus = Bus.of(vertx);
          writer = new LedgerWriter(context, pool, nodeId, counting, config.lockTimeout(), metrics, access::outboxWritten);
          // The hot path calls the writer directly; the bus addresses serve the retry part, tools and tests.
          bus.serve(LedgerMessages.OPEN, Open.class, writer::open);
          bus.serve(LedgerMessages.SETTLE, Settle.class, writer::settle);
          bus.serve(LedgerMessages.LIST, ListQuery.class, ledger::list);
          bus.serve(LedgerMessages.GET, Get.class, ledger::get);
          bus.serve(LedgerMessages.PING, Ping.class, p -> ledger.ping().map(v -> p));
          KeyedOpen keyed = new KeyedOpen(pool, nodeId, access.policy(), metrics, access::outboxWritten);
          bus.serve(LedgerMessages.OPEN_KEYED, LedgerMessages.OpenKeyed.class, keyed::open);
          return null;
        })
        .compose(x -> startStores(0));
  }

  /**
   * The partitions of this week and the next {@link Partitions#AHEAD_WEEKS}, before any mail is taken (the partition
   * job keeps them ahead afterwards). A failure is not fatal: until a later pass makes the week, its rows go to the
   * DEFAULT partition, which the job reports.
   */
  private static void makeWeeksAhead(DatabaseTarget t) {
    try (java.sql.Connection c = t.connect()) {
      java.util.List<String> made = Partitions.ensureWeeks(c, java.time.Instant.now(), Partitions.AHEAD_WEEKS + 1);
      if (!made.isEmpty()) {
        LOG.info("ledger partitions made ahead: {}", made);
      }
    } catch (java.sql.SQLException e) {
      LOG.warn("ledger partitions could not be made ahead at start ({}); the partition job tries again", e.getMessage());
    }
  }

  /** The stores one after another, each ready before the next is made. */
  private Future<Void> startStores(int i) {
    if (i == stores.size()) {
      return Future.succeededFuture();
    }
    LedgerStore store = stores.get(i).apply(access);
    return store.started().compose(x -> {
      started.add(store);
      return startStores(i + 1);
    });
  }

  /** In reverse start order; a store that fails to stop is logged, and the others still stop. */
  private Future<Void> stopStores() {
    Future<Void> chain = Future.succeededFuture();
    for (int i = started.size() - 1; i >= 0; i--) {
      LedgerStore store = started.get(i);
      chain = chain.eventually(() -> store.stop().recover(e -> {
        LOG.warn("stopping the ledger store {} failed", store.getClass().getSimpleName(), e);
        return Future.succeededFuture();
      }));
    }
    return chain.onComplete(ar -> started.clear());
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
    Future<Void> closed = stopStores().eventually(() -> pool == null ? Future.succeededFuture() : pool.close());
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
