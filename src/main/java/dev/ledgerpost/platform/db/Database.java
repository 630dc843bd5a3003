package dev.ledgerpost.platform.db;

import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one database handle of a gateway (issue 27): made by the ledger part once the schema is migrated, then handed to
 * every part with SQL of its own, which runs its statements on its own verticle. It holds the pool, the options for a
 * connection of a part's own (LISTEN, the chaos locks'), this node's id, the {@link TransactionPolicy} every
 * transaction runs under with its retries counted in one place, and the wake-up of the outbox after a commit that
 * wrote outbox rows.
 *
 * <p>One pool for the whole process ({@code ledger.poolSize} connections): a Vert.x SQL pool is not bound to a
 * context. Each operation takes the caller's context ({@code vertx.getOrCreateContext()} in the pool) and completes
 * on it, so a part that calls it from its own verticle gets its callbacks on its own event loop, and connections are
 * lent to whichever context asks. A pool per part would multiply the connections the operator sized and split them
 * so that a busy part could not borrow an idle part's. The pool is made on the ledger's context, so Vert.x also closes
 * it when the ledger's verticle is undeployed; the gateway undeploys the ledger last, after every part that uses this
 * handle.
 */
public final class Database {
  /**
   * The hot path's own connections (the writer's open and settle, one statement each in flight, and the outbox
   * publisher), beside the {@code ledger.poolSize} of the pool: they run on generic plans
   * ({@link DatabaseTarget#hotPathOptions()}), which the other parts' queries must not.
   */
  public static final int HOT_PATH_CONNECTIONS = 3;
  /** Its name in Vert.x's pool metrics ({@code vertx_pool_*{pool_name}}): the unnamed pool's would clash. */
  public static final String HOT_PATH_POOL_NAME = "ledgerpost-hot-path";
  private final Pool pool;
  private final Pool hotPool;
  private final PgConnectOptions connectOptions;
  private final String nodeId;
  private final GatewayMetrics metrics;
  private final Map<String, AtomicLong> retries = new ConcurrentHashMap<>();
  private final TransactionPolicy.Listener counting;
  private final TransactionPolicy policy;
  /** Called from any event loop after a commit: each one must be cheap and thread-safe. */
  private final List<Runnable> outboxListeners = new CopyOnWriteArrayList<>();

  private Database(Vertx vertx, Pool pool, Pool hotPool, PgConnectOptions connectOptions, String nodeId,
      GatewayMetrics metrics) {
    this.pool = pool;
    this.hotPool = hotPool;
    this.connectOptions = connectOptions;
    this.nodeId = nodeId;
    this.metrics = metrics;
    this.counting = (kind, cause, next) -> {
      retries.computeIfAbsent(cause, c -> new AtomicLong()).incrementAndGet();
      metrics.ledgerRetry(cause);
    };
    this.policy = new TransactionPolicy(vertx, counting);
  }

  /** The pool of {@code poolSize} connections to {@code target}; call it on the ledger's context (see above). */
  public static Database open(Vertx vertx, DatabaseTarget target, int poolSize, String nodeId, GatewayMetrics metrics) {
    Pool pool = PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(poolSize))
        .connectingTo(target.options())
        .using(vertx)
        .build();
    Pool hotPool = PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(HOT_PATH_CONNECTIONS).setName(HOT_PATH_POOL_NAME))
        .connectingTo(target.hotPathOptions())
        .using(vertx)
        .build();
    return new Database(vertx, pool, hotPool, target.options(), nodeId, metrics);
  }

  public Pool pool() {
    return pool;
  }

  /** The hot path's connections, on generic plans (see {@link #HOT_PATH_CONNECTIONS}): for its statements only. */
  public Pool hotPool() {
    return hotPool;
  }

  /** For a connection of a part's own, outside the pool (LISTEN, a held lock). */
  public PgConnectOptions connectOptions() {
    return connectOptions;
  }

  /** This gateway's node.id, recorded on every row it opens. */
  public String nodeId() {
    return nodeId;
  }

  public GatewayMetrics metrics() {
    return metrics;
  }

  /** docs/contract.md §2.2, for every part's transactions; its retries count with the ledger's. */
  public TransactionPolicy policy() {
    return policy;
  }

  /** What the ledger's group commit reports its retries to (the same count as {@link #policy()}'s). */
  public TransactionPolicy.Listener retryListener() {
    return counting;
  }

  /** Whole-transaction retries so far, by SQLSTATE (or "connection"). */
  public Map<String, Long> retries() {
    Map<String, Long> copy = new TreeMap<>();
    retries.forEach((k, v) -> copy.put(k, v.get()));
    return copy;
  }

  /** Runs {@code listener} after every commit that wrote outbox rows, from any thread: it must be cheap. */
  public void onOutboxWritten(Runnable listener) {
    outboxListeners.add(listener);
  }

  public void noLongerOnOutboxWritten(Runnable listener) {
    outboxListeners.remove(listener);
  }

  /** A commit wrote outbox rows: the ledger's writer and keyed open say so, from the event loop that committed. */
  public void outboxWritten() {
    for (Runnable r : outboxListeners) {
      r.run();
    }
  }

  public Future<Void> close() {
    return Future.join(pool.close(), hotPool.close()).mapEmpty();
  }
}
