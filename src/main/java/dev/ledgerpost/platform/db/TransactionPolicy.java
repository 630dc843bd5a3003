package dev.ledgerpost.platform.db;

import dev.ledgerpost.platform.bus.Hop;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * docs/contract.md §2.2: a whole transaction is retried, never one statement, and only for causes that another
 * attempt can cure (a lock wait that timed out, a serialization failure, a deadlock, a lost
 * connection). Everything else fails at once. Causes are told apart by SQLSTATE, never by text.
 */
public final class TransactionPolicy {
  private static final Logger LOG = LoggerFactory.getLogger(TransactionPolicy.class);

  public static final int MAX_ATTEMPTS = 3;
  /** Pause before attempt 2 and 3; jitter of +-20 % keeps colliding writers from colliding again. */
  private static final long[] BACKOFF_MILLIS = {50, 100};

  static final Set<String> RETRYABLE_STATES = Set.of("55P03", "40001", "40P01");
  /** admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now. */
  private static final Set<String> CONNECTION_STATES = Set.of("57P01", "57P02", "57P03");
  /** Label of a retry caused by a lost connection rather than a SQLSTATE. */
  public static final String CONNECTION_LOST = "connection";

  /** Told about every retry; metrics hang here. */
  public interface Listener {
    void retried(String kind, String cause, int nextAttempt);

    Listener NONE = (kind, cause, next) -> {};
  }

  private final Vertx vertx;
  private final Listener listener;

  public TransactionPolicy(Vertx vertx, Listener listener) {
    this.vertx = vertx;
    this.listener = listener;
  }

  /** Runs {@code attempt} (one whole transaction) up to {@link #MAX_ATTEMPTS} times. */
  public <T> Future<T> run(String kind, Supplier<Future<T>> attempt) {
    Promise<T> promise = Promise.promise();
    attempt(kind, attempt, 1, promise);
    return promise.future();
  }

  private <T> void attempt(String kind, Supplier<Future<T>> attempt, int n, Promise<T> promise) {
    Hop.guarded(attempt).onComplete(ar -> {
      if (ar.succeeded()) {
        promise.complete(ar.result());
        return;
      }
      String cause = retryCause(ar.cause());
      if (cause == null || n >= MAX_ATTEMPTS) {
        promise.fail(ar.cause());
        return;
      }
      long pause = jittered(BACKOFF_MILLIS[n - 1]);
      LOG.warn("ledger {} transaction attempt {} failed ({}); retrying in {} ms", kind, n, cause, pause);
      listener.retried(kind, cause, n + 1);
      vertx.setTimer(pause, t -> attempt(kind, attempt, n + 1, promise));
    });
  }

  private static long jittered(long base) {
    double factor = 0.8 + ThreadLocalRandom.current().nextDouble() * 0.4;
    return Math.max(1, Math.round(base * factor));
  }

  /** The SQLSTATE (or {@link #CONNECTION_LOST}) that makes another attempt worthwhile, or null. */
  public static String retryCause(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg) {
        String state = pg.getSqlState();
        if (state == null) {
          return null;
        }
        if (RETRYABLE_STATES.contains(state)) {
          return state;
        }
        if (state.startsWith("08") || CONNECTION_STATES.contains(state)) {
          return CONNECTION_LOST;
        }
        return null;
      }
      if (c instanceof ClosedConnectionException || c instanceof IOException) {
        return CONNECTION_LOST;
      }
    }
    return null;
  }
}
