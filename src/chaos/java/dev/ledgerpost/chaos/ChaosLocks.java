package dev.ledgerpost.chaos;

import dev.ledgerpost.chaos.ChaosMessages.ChaosLock;
import dev.ledgerpost.chaos.ChaosMessages.ChaosLocked;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.StoreException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chaos mode: ACCESS EXCLUSIVE locks on ledger tables, held from a connection of their own (not the
 * pool's), so a load test can make lock contention on demand. Bounded: one at a time, at most 10 s. Started
 * only when {@code chaos.enabled} is set; a production gateway has no such address.
 */
public final class ChaosLocks {
  private static final Logger LOG = LoggerFactory.getLogger(ChaosLocks.class);
  static final Set<String> TABLES = Set.of("messages", "recipients", "outbox", "resolutions", "idempotency_keys");
  static final long MAX_MILLIS = 10_000;

  private final Vertx vertx;
  private final PgConnectOptions options;
  private boolean held;

  /** Serves its address on the context it is made on (its own verticle's, {@link ChaosVerticle}). */
  public ChaosLocks(Database db, Vertx vertx) {
    this.vertx = vertx;
    options = db.connectOptions();
    Bus.of(vertx).serve(ChaosMessages.LOCK, ChaosLock.class, this::hold);
  }

  /** Completes once the locks are held (or fails: bad request, busy, lock not obtained). */
  Future<ChaosLocked> hold(ChaosLock request) {
    List<String> tables = request.tables();
    if (tables == null || tables.isEmpty() || !TABLES.containsAll(tables) || request.millis() < 1
        || request.millis() > MAX_MILLIS) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST,
          "tables must be a non-empty subset of " + TABLES + " and millis 1.." + MAX_MILLIS));
    }
    if (held) {
      return Future.failedFuture(new StoreException(StoreException.Kind.STALE, "a chaos lock is already held"));
    }
    held = true;
    return PgConnection.connect(vertx, options).compose(conn -> conn.query("BEGIN").execute()
        .compose(x -> conn.query("LOCK TABLE " + String.join(", ", tables) + " IN ACCESS EXCLUSIVE MODE").execute())
        .map(x -> {
          LOG.warn("chaos: holding ACCESS EXCLUSIVE on {} for {} ms", tables, request.millis());
          vertx.setTimer(request.millis(), t -> conn.query("ROLLBACK").execute().eventually(conn::close)
              .onComplete(ar -> held = false));
          return new ChaosLocked(List.copyOf(tables), request.millis());
        })
        .onFailure(e -> conn.close().onComplete(ar -> held = false)))
        .onFailure(e -> held = false);
  }
}
