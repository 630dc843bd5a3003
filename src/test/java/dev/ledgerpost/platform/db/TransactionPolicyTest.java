package dev.ledgerpost.platform.db;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import java.net.ConnectException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** docs/contract.md §2.2: which failures earn another attempt, how many, and that others fail at once. */
class TransactionPolicyTest {
  final Vertx vertx = Vertx.vertx();
  final List<String> retried = new ArrayList<>();
  final TransactionPolicy policy = new TransactionPolicy(vertx, (kind, cause, next) -> retried.add(cause + "#" + next));

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  static PgException pg(String state) {
    return new PgException("message text that must not matter", "ERROR", state, null);
  }

  @Test
  void classifiesBySqlStateNeverByText() {
    assertThat(TransactionPolicy.retryCause(pg("55P03"))).isEqualTo("55P03");
    assertThat(TransactionPolicy.retryCause(pg("40001"))).isEqualTo("40001");
    assertThat(TransactionPolicy.retryCause(pg("40P01"))).isEqualTo("40P01");
    assertThat(TransactionPolicy.retryCause(pg("57P01"))).isEqualTo(TransactionPolicy.CONNECTION_LOST);
    assertThat(TransactionPolicy.retryCause(pg("08006"))).isEqualTo(TransactionPolicy.CONNECTION_LOST);
    assertThat(TransactionPolicy.retryCause(ClosedConnectionException.INSTANCE)).isEqualTo(TransactionPolicy.CONNECTION_LOST);
    assertThat(TransactionPolicy.retryCause(new ConnectException("refused"))).isEqualTo(TransactionPolicy.CONNECTION_LOST);
    assertThat(TransactionPolicy.retryCause(new RuntimeException("wrapped", pg("40P01")))).isEqualTo("40P01");
    // "lock" in the text of a constraint violation must not make it retryable
    assertThat(TransactionPolicy.retryCause(new PgException("lock timeout deadlock", "ERROR", "23505", null))).isNull();
    assertThat(TransactionPolicy.retryCause(pg("22P02"))).isNull();
    assertThat(TransactionPolicy.retryCause(new IllegalStateException("lock_not_available"))).isNull();
  }

  @Test
  void retriesAWholeTransactionAtMostThreeTimes() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    Future<String> f = policy.run("open", () -> {
      attempts.incrementAndGet();
      return Future.failedFuture(pg("55P03"));
    });
    Throwable failure = awaitFailure(f);
    assertThat(attempts.get()).isEqualTo(3);
    assertThat(failure).isInstanceOf(PgException.class);
    assertThat(retried).containsExactly("55P03#2", "55P03#3");
  }

  @Test
  void succeedsWhenALaterAttemptSucceeds() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    Future<String> f = policy.run("settle", () -> attempts.incrementAndGet() < 2
        ? Future.failedFuture(pg("40001"))
        : Future.succeededFuture("ok"));
    assertThat(f.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS)).isEqualTo("ok");
    assertThat(attempts.get()).isEqualTo(2);
  }

  @Test
  void otherErrorsFailAtOnce() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    Throwable failure = awaitFailure(policy.run("open", () -> {
      attempts.incrementAndGet();
      return Future.failedFuture(pg("23505"));
    }));
    assertThat(attempts.get()).isEqualTo(1);
    assertThat(((PgException) failure).getSqlState()).isEqualTo("23505");
    assertThat(retried).isEmpty();
  }

  private static Throwable awaitFailure(Future<?> f) throws Exception {
    try {
      f.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      throw new AssertionError("expected a failure");
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }
}
