package dev.ledgerpost.ledger;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * What a {@link LedgerStore} gets from the ledger: the one pool (the ledger stays its only owner), the retry
 * policy every ledger transaction runs under (§2.2), the reads, and a hook for commits that wrote outbox rows.
 */
public final class LedgerAccess {
  private final Context context;
  private final Pool pool;
  private final PgConnectOptions connectOptions;
  private final String nodeId;
  private final TransactionPolicy policy;
  private final GatewayMetrics metrics;
  private final List<Runnable> outboxWritten = new CopyOnWriteArrayList<>();

  LedgerAccess(Context context, Pool pool, PgConnectOptions connectOptions, String nodeId, TransactionPolicy policy,
      GatewayMetrics metrics) {
    this.context = context;
    this.pool = pool;
    this.connectOptions = connectOptions;
    this.nodeId = nodeId;
    this.policy = policy;
    this.metrics = metrics;
  }

  /** The ledger verticle's context, where every store runs. */
  public Context context() {
    return context;
  }

  public Bus bus() {
    return Bus.of(context.owner());
  }

  /** Serves one address of the store on the ledger's context (see {@link Bus#serve}). */
  public <Q, R> void serve(String address, Class<Q> requestType, Function<Q, Future<R>> handler) {
    bus().serve(address, requestType, handler);
  }

  public Pool pool() {
    return pool;
  }

  /** For a connection of a store's own, outside the pool: LISTEN, or the chaos locks'. */
  public PgConnectOptions connectOptions() {
    return connectOptions;
  }

  /** This gateway's node.id, recorded on the rows it opens. */
  public String nodeId() {
    return nodeId;
  }

  /** Whole-transaction retries, counted with the ledger's own. */
  public TransactionPolicy policy() {
    return policy;
  }

  public GatewayMetrics metrics() {
    return metrics;
  }

  /** The ledger's reads (list, detail, ping). */
  public Ledger reads() {
    return new Ledger(pool);
  }

  /** Runs {@code listener} after every commit that wrote outbox rows; from any thread, so it must be cheap. */
  public void onOutboxWritten(Runnable listener) {
    outboxWritten.add(listener);
  }

  void outboxWritten() {
    for (Runnable r : outboxWritten) {
      r.run();
    }
  }
}
