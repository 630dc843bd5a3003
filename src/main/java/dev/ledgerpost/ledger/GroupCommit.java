package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.TransactionPolicy;

import dev.ledgerpost.platform.bus.Hop;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit (docs/contract.md §2.6): requests of one kind that arrive while a statement of that kind is in
 * flight are written together, as one statement and one commit, when it ends. There is no fixed wait:
 * a lone request goes at once, and a batch is as large as what queued meanwhile (at most {@link #MAX_BATCH}).
 *
 * <p>Each request still gets its own answer. A batch that fails for a reason that belongs to one request
 * (a constraint, LP001) is split and every request is tried alone, so one bad message never fails its
 * siblings. A batch that fails as a whole (a lock wait that timed out, a lost connection) is retried as a
 * whole, under the retry policy of §2, but never past the deadline of its oldest request, so no request
 * waits longer for its answer than it would have alone.
 *
 * <p>Threading: {@link #submit} may be called from any thread (SMTP and HTTP event loops); the queue is
 * drained and every statement run on the ledger's own context; each answer is delivered on the context
 * of the caller that asked.
 */
final class GroupCommit<Q, R> {
  private static final Logger LOG = LoggerFactory.getLogger(GroupCommit.class);
  static final int MAX_BATCH = 64;
  /**
   * As the event bus bounded a request before: a statement that gets no answer at all in this time has failed (a server
   * that stops answering without closing its connections must not hold a client forever).
   */
  static final long STATEMENT_TIMEOUT_MILLIS = 30_000;
  /** Pause before attempt 2 and 3; jitter of +-20 %. */
  private static final long[] BACKOFF_MILLIS = {50, 100};

  /** One statement for a batch. The list it answers has one entry per request, in order. */
  interface Statement<Q, R> {
    Future<List<Outcome<R>>> run(List<Q> batch, int attempt);

    /** Requests with equal keys never share a batch (two settles of one message). */
    Object key(Q request);
  }

  /** A request's own answer inside a batch that committed: a value, or a failure that is its alone. */
  record Outcome<R>(R value, RuntimeException failure) {
    static <R> Outcome<R> of(R value) {
      return new Outcome<>(value, null);
    }

    static <R> Outcome<R> failed(RuntimeException e) {
      return new Outcome<>(null, e);
    }
  }

  private static final class Request<Q, R> {
    final Q payload;
    final Promise<R> promise = Promise.promise();
    final Context caller;
    final long enqueued = System.nanoTime();

    Request(Q payload, Context caller) {
      this.payload = payload;
      this.caller = caller;
    }

    void complete(R value, Throwable failure) {
      Hop.complete(caller, promise, value, failure);
    }
  }

  /**
   * Answers a committed batch: the requests of one caller context in one task on it, in their order, not a task each
   * (issue 33: the answers' hops back were on 11.9 % of the profile's stacks). Each promise still completes on its
   * caller's context, at once when that is this one or there is none, as {@link Hop#complete} does.
   */
  private static <Q, R> void answer(List<Request<Q, R>> batch, List<Outcome<R>> outcomes) {
    Context here = Vertx.currentContext();
    List<Context> callers = new ArrayList<>(4);
    List<List<Runnable>> work = new ArrayList<>(4);
    for (int i = 0; i < batch.size(); i++) {
      Request<Q, R> r = batch.get(i);
      Outcome<R> o = outcomes.get(i);
      if (r.caller == null || r.caller == here) {
        r.complete(o.value(), o.failure());
        continue;
      }
      int k = callers.indexOf(r.caller);
      if (k < 0) {
        callers.add(r.caller);
        work.add(new ArrayList<>(batch.size()));
        k = callers.size() - 1;
      }
      work.get(k).add(() -> r.complete(o.value(), o.failure()));
    }
    for (int k = 0; k < callers.size(); k++) {
      List<Runnable> answers = work.get(k);
      callers.get(k).runOnContext(v -> answers.forEach(Runnable::run));
    }
  }

  private final String kind;
  private final Context context;
  private final Statement<Q, R> statement;
  private final TransactionPolicy.Listener listener;
  private final long budgetNanos;
  private final long lockTimeoutNanos;
  private final int maxInFlight;
  private final Consumer<Integer> committed;
  private final long statementTimeoutMillis;
  private final ConcurrentLinkedQueue<Request<Q, R>> incoming = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean drainScheduled = new AtomicBoolean();
  /** Touched on the ledger's context only. */
  private final ArrayDeque<Request<Q, R>> queue = new ArrayDeque<>();
  private int inFlight;
  private boolean recheckArmed;

  /**
   * @param budgetMillis how long one request may wait for its answer, batching and retries included
   * @param committed told, on the ledger's context, how many requests each committed statement carried
   * @param statementTimeoutMillis how long a statement may go without any answer ({@link #STATEMENT_TIMEOUT_MILLIS})
   */
  GroupCommit(String kind, Context context, Statement<Q, R> statement, TransactionPolicy.Listener listener,
      long budgetMillis, long lockTimeoutMillis, int maxInFlight, Consumer<Integer> committed, long statementTimeoutMillis) {
    this.kind = kind;
    this.context = context;
    this.statement = statement;
    this.listener = listener;
    this.budgetNanos = budgetMillis * 1_000_000L;
    this.lockTimeoutNanos = lockTimeoutMillis * 1_000_000L;
    this.maxInFlight = maxInFlight;
    this.committed = committed;
    this.statementTimeoutMillis = statementTimeoutMillis;
  }

  /** From any thread; the answer comes back on the caller's context. */
  Future<R> submit(Q payload) {
    Request<Q, R> r = new Request<>(payload, Vertx.currentContext());
    incoming.add(r);
    if (drainScheduled.compareAndSet(false, true)) {
      if (Vertx.currentContext() == context) {
        drain();
      } else {
        context.runOnContext(v -> drain());
      }
    }
    return r.promise.future();
  }

  private void drain() {
    drainScheduled.set(false);
    Request<Q, R> r;
    while ((r = incoming.poll()) != null) {
      queue.add(r);
    }
    dispatch();
  }

  /**
   * Starts batches while there is room. A request that has waited a quarter of a lock timeout for room
   * gets a batch of its own beyond the limit: a statement stuck on a lock must not stretch the wait of
   * everything queued behind it past its budget.
   */
  private void dispatch() {
    while (!queue.isEmpty()) {
      boolean overdue = System.nanoTime() - queue.peekFirst().enqueued > lockTimeoutNanos / 4;
      if (inFlight >= maxInFlight && !(overdue && inFlight < maxInFlight * 4)) {
        if (overdue) {
          return; // at the hard limit: the next completion dispatches
        }
        if (!recheckArmed) { // not overdue yet: look again when it would be
          recheckArmed = true;
          context.owner().setTimer(Math.max(1, lockTimeoutNanos / 4 / 1_000_000L), t -> {
            recheckArmed = false;
            dispatch();
          });
        }
        return;
      }
      List<Request<Q, R>> batch = new ArrayList<>(Math.min(queue.size(), MAX_BATCH));
      Set<Object> keys = new HashSet<>();
      ArrayDeque<Request<Q, R>> later = new ArrayDeque<>();
      while (!queue.isEmpty() && batch.size() < MAX_BATCH) {
        Request<Q, R> next = queue.poll();
        if (keys.add(statement.key(next.payload))) {
          batch.add(next);
        } else {
          later.add(next);
        }
      }
      while (!later.isEmpty()) {
        queue.addFirst(later.pollLast());
      }
      inFlight++;
      run(batch, 1, deadline(batch)).onComplete(ar -> {
        inFlight--;
        dispatch();
      });
    }
  }

  private long deadline(List<Request<Q, R>> batch) {
    long oldest = Long.MAX_VALUE;
    for (Request<Q, R> r : batch) {
      oldest = Math.min(oldest, r.enqueued);
    }
    return oldest + budgetNanos;
  }

  /** One attempt of a batch, then its retries, its split, or its answers. Never fails. */
  private Future<Void> run(List<Request<Q, R>> batch, int attempt, long deadline) {
    List<Q> payloads = new ArrayList<>(batch.size());
    for (Request<Q, R> r : batch) {
      payloads.add(r.payload);
    }
    Future<List<Outcome<R>>> f;
    try {
      f = statement.run(payloads, attempt).timeout(statementTimeoutMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    return f.transform(ar -> {
      if (ar.succeeded()) {
        answer(batch, ar.result());
        committed.accept(batch.size());
        return Future.succeededFuture();
      }
      Throwable cause = ar.cause();
      if (cause instanceof java.util.concurrent.TimeoutException) {
        LOG.error("ledger {} statement for {} request(s) got no answer within {} ms; answering them as failed",
            kind, batch.size(), statementTimeoutMillis);
        for (Request<Q, R> r : batch) {
          r.complete(null, cause);
        }
        return Future.succeededFuture();
      }
      String retry = TransactionPolicy.retryCause(cause);
      if (retry == null) {
        if (batch.size() > 1) {
          LOG.debug("ledger {} batch of {} failed ({}); trying each alone", kind, batch.size(), cause.getMessage());
          return split(batch, deadline);
        }
        batch.get(0).complete(null, cause);
        return Future.succeededFuture();
      }
      long pause = attempt <= BACKOFF_MILLIS.length ? jittered(BACKOFF_MILLIS[attempt - 1]) : 0;
      boolean inBudget = System.nanoTime() + pause * 1_000_000L + lockTimeoutNanos <= deadline;
      if (attempt >= TransactionPolicy.MAX_ATTEMPTS || !inBudget) {
        for (Request<Q, R> r : batch) {
          r.complete(null, cause);
        }
        return Future.succeededFuture();
      }
      LOG.warn("ledger {} batch of {} attempt {} failed ({}); retrying in {} ms", kind, batch.size(), attempt, retry, pause);
      listener.retried(kind, retry, attempt + 1);
      Promise<Void> later = Promise.promise();
      context.owner().setTimer(pause, t -> run(batch, attempt + 1, deadline).onComplete(later));
      return later.future();
    });
  }

  /** Each request alone, one after the other, with the batch's deadline. */
  private Future<Void> split(List<Request<Q, R>> batch, long deadline) {
    Future<Void> chain = Future.succeededFuture();
    for (Request<Q, R> r : batch) {
      chain = chain.compose(v -> run(List.of(r), 1, Math.max(deadline, r.enqueued + budgetNanos)));
    }
    return chain;
  }

  private static long jittered(long base) {
    double factor = 0.8 + ThreadLocalRandom.current().nextDouble() * 0.4;
    return Math.max(1, Math.round(base * factor));
  }

  /** LP001: the statement refused its own result (a settle that did not touch the recipients it had to). */
  static boolean refusedByLedger(Throwable e) {
    return e instanceof PgException pg && "LP001".equals(pg.getSqlState());
  }
}
