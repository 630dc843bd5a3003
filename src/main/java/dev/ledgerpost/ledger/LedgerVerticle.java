package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.EmbeddedDatabase;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the PostgreSQL side: starts the embedded server when no URL is configured, migrates the schema, makes the one
 * {@link Database} handle (the pool) that the other parts run their own SQL over on their own verticles, and serves the
 * ledger's own event-bus addresses (open with a key, settle, list, get, ping) on its context.
 */
public final class LedgerVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerVerticle.class);

  private final GatewayConfig.Ledger config;
  private EmbeddedDatabase embedded;

  private Database database;
  private LedgerWriter writer;
  private DatabaseTarget target;

  private final GatewayMetrics metrics;
  /** This gateway's node.id, recorded on every row it opens. */
  private final String nodeId;
  /** node.deadAfter, for the resubmission claims' holders (docs/contract.md §1.13). */
  private final java.time.Duration nodeDeadAfter;
  private final QuotaCounting quota;

  public LedgerVerticle(GatewayConfig.Ledger config, String nodeId, GatewayMetrics metrics, java.time.Duration nodeDeadAfter) {
    this(config, nodeId, metrics, nodeDeadAfter, QuotaCounting.OFF);
  }

  /** @param quota the users' hourly and daily quotas, counted in the open's statement (docs/design.md §8.9) */
  public LedgerVerticle(GatewayConfig.Ledger config, String nodeId, GatewayMetrics metrics, java.time.Duration nodeDeadAfter,
      QuotaCounting quota) {
    this.quota = quota;
    this.config = config;
    this.nodeDeadAfter = nodeDeadAfter;
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
          makeWeeksAhead(t);
          return t;
        })
        .compose(t -> {
          target = t;
          database = Database.open(vertx, t, config.poolSize(), nodeId, metrics); // on this context: see Database
          return warnIfNotDurable();
        })
        .map(x -> {
          Pool pool = database.pool();
          Ledger ledger = new Ledger(pool);
          Bus bus = Bus.of(vertx);
          // The writer's open and settle run on the hot path's connections, on generic plans (Database.hotPool).
          writer = new LedgerWriter(context, database.hotPool(), nodeId, database.retryListener(), config.lockTimeout(), metrics,
              database::outboxWritten, nodeDeadAfter, quota);
          // The hot path calls the writer directly; the bus addresses serve the retry part, the API and tools.
          bus.serve(LedgerMessages.SETTLE, Settle.class, writer::settle);
          bus.serve(LedgerMessages.LIST, ListQuery.class, ledger::list);
          bus.serve(LedgerMessages.GET, Get.class, ledger::get);
          bus.serve(LedgerMessages.PING, Ping.class, p -> ledger.ping().map(v -> p));
          bus.serve(LedgerMessages.PRUNE_CLAIMS, LedgerMessages.PruneClaims.class, ledger::pruneClaims);
          return null;
        });
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

  /** A commit must mean durable; an external server that says otherwise is reported, not changed. */
  private Future<Void> warnIfNotDurable() {
    return database.pool().query("SELECT current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fs").execute()
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
    Future<Void> closed = database == null ? Future.succeededFuture() : database.close();
    return closed.eventually(() -> embedded == null
        ? Future.succeededFuture()
        : vertx.executeBlocking(() -> {
          embedded.close();
          return null;
        }));
  }

  /** The handle the other parts run their SQL over; set once this verticle has started. */
  public Database database() {
    return database;
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
