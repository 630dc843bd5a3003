package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.db.TransactionPolicy;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import java.util.List;
import java.util.function.Function;

/**
 * What a {@link LedgerStore} gets from the ledger: its context (where every store runs), the one pool (the ledger
 * stays its only owner), the options for a connection of a store's own (LISTEN, the chaos locks'), this node's id,
 * the retry policy every ledger transaction runs under (§2.2, its retries counted with the ledger's), and the
 * listeners of commits that wrote outbox rows ({@link #onOutboxWritten}).
 */
public record LedgerAccess(Context context, Pool pool, PgConnectOptions connectOptions, String nodeId,
    TransactionPolicy policy, GatewayMetrics metrics, List<Runnable> outboxListeners) {

  public Bus bus() {
    return Bus.of(context.owner());
  }

  /** Serves one address of the store on the ledger's context (see {@link Bus#serve}). */
  public <Q, R> void serve(String address, Class<Q> requestType, Function<Q, Future<R>> handler) {
    bus().serve(address, requestType, handler);
  }

  /** The ledger's reads (list, detail, ping). */
  public Ledger reads() {
    return new Ledger(pool);
  }

  /** Runs {@code listener} after every commit that wrote outbox rows; from any thread, so it must be cheap. */
  public void onOutboxWritten(Runnable listener) {
    outboxListeners.add(listener);
  }

  void outboxWritten() {
    for (Runnable r : outboxListeners) {
      r.run();
    }
  }
}
