package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.LedgerMessages.Settled;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.UUID;

/**
 * The ledger's hot path, called directly by the relay contract from any event loop (no event-bus hop):
 * opens and settles, each group-committed (docs/contract.md §2.6). Failures come back as {@link StoreException}
 * (PERSISTENCE after the retries, STALE, NOT_FOUND, BAD_REQUEST), never as a driver exception.
 */
public final class LedgerWriter {
  /** Statements of one kind in flight at once before requests wait to be batched (more when they wait long). */
  static final int MAX_IN_FLIGHT = 1;
  /** The most messages one group-committed statement holds, so the most events in one outbox row (a CHECK in V40). */
  public static final int MAX_BATCH = GroupCommit.MAX_BATCH;

  private final GroupCommit<Open, Opened> opens;
  private final GroupCommit<Settle, Settled> settles;
  private final GatewayMetrics metrics;

  LedgerWriter(Context context, Pool pool, String nodeId, TransactionPolicy.Listener listener, Duration lockTimeout,
      GatewayMetrics metrics, Runnable committed) {
    this(context, pool, nodeId, listener, lockTimeout, metrics, committed, Duration.ofSeconds(15));
  }

  /** @param nodeDeadAfter node.deadAfter: how long a node's heartbeat vouches for the rows it holds (§1.13) */
  LedgerWriter(Context context, Pool pool, String nodeId, TransactionPolicy.Listener listener, Duration lockTimeout,
      GatewayMetrics metrics, Runnable committed, Duration nodeDeadAfter) {
    this(context, pool, nodeId, listener, lockTimeout, metrics, committed, nodeDeadAfter, QuotaCounting.OFF);
  }

  /** @param quota the users' hourly and daily quotas, counted by the open's own statement (docs/design.md §8.9) */
  LedgerWriter(Context context, Pool pool, String nodeId, TransactionPolicy.Listener listener, Duration lockTimeout,
      GatewayMetrics metrics, Runnable committed, Duration nodeDeadAfter, QuotaCounting quota) {
    this.metrics = metrics;
    long lock = lockTimeout.toMillis();
    // Today's bound for one message (docs/contract.md §2.3): three attempts of lock_timeout each, with their pauses.
    long budget = TransactionPolicy.MAX_ATTEMPTS * lock + 150 + 100;
    this.opens = new GroupCommit<>("open", context, new OpenBatch(pool, nodeId, nodeDeadAfter, quota), listener, budget, lock, MAX_IN_FLIGHT,
        n -> committed.run(), GroupCommit.STATEMENT_TIMEOUT_MILLIS);
    this.settles = new GroupCommit<>("settle", context, new SettleBatch(pool), listener, budget, lock, MAX_IN_FLIGHT,
        n -> committed.run(), GroupCommit.STATEMENT_TIMEOUT_MILLIS);
  }

  /**
   * Opens a PENDING entry; only once this succeeded may the body go downstream. An answer with
   * {@link LedgerMessages.Opened#overQuota()} opened nothing: the user's quota is used up.
   */
  public Future<Opened> open(Open open) {
    long started = System.nanoTime();
    return opens.submit(open)
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.OPEN, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("open", open.id(), e)));
  }

  /** The versioned settle of a PENDING entry; an identical settle that already committed answers as done. */
  public Future<Settled> settle(Settle settle) {
    if (settle.target() == MessageStatus.PENDING) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, "cannot settle to PENDING"));
    }
    long started = System.nanoTime();
    return settles.submit(settle)
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.SETTLE, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("settle", settle.id(), e)));
  }

  static StoreException persistence(String kind, UUID id, Throwable e) {
    if (e instanceof StoreException le) {
      return le;
    }
    if (GroupCommit.refusedByLedger(e)) {
      return new StoreException(StoreException.Kind.STALE, kind + " of " + id + " refused: "
          + ((io.vertx.pgclient.PgException) e).getErrorMessage());
    }
    return new StoreException(StoreException.Kind.PERSISTENCE, "ledger " + kind + " of " + id + " failed: " + e.getMessage(), e);
  }
}
