package dev.ledgerpost.relay.retry;

import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.bus.Hop;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Settled;
import dev.ledgerpost.relay.retry.RetryMessages.HeldOutcomes;
import dev.ledgerpost.relay.retry.RetryMessages.HeldQuery;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The retry part (docs/contract.md §1.7): it owns the outcome journal (which the relay contract appends to
 * directly while it settles, §1.5), and re-runs the
 * versioned settle of every outcome whose settle failed until the ledger has it, for as long as the
 * process lives. It talks to the ledger only, over the bus: it has no handle on the delivery part and
 * cannot send mail.
 *
 * <p>While the ledger fails, one outcome at a time probes it, with exponential backoff and jitter, so
 * that a thousand held outcomes do not hammer a database that is down or locked; as soon as one
 * settle commits the rest follow, a few at a time.
 */
public final class RetryVerticle extends VerticleBase implements OutcomeKeeper {
  private static final Logger LOG = LoggerFactory.getLogger(RetryVerticle.class);

  /** Counters for tests and, later, metrics. */
  public record Stats(int held, long settled, long dropped, long parked, long duplicates, long attempts,
      long failedAttempts, long journalAppends, long journalSyncs, long journalCompactions, long journalOpen, long journalBytes,
      long notSentClosed) {}

  private enum State {
    /** Journaled; the delivery part's own settle is under way. */
    DELIVERING,
    /** Handed over; being journaled because the delivery part could not. */
    JOURNALING,
    QUEUED,
    SETTLING,
    /** The ledger refuses it for good (no such message): kept in the journal, not retried until restart. */
    PARKED
  }

  private static final class Entry {
    final KnownOutcome outcome;
    final long since = System.nanoTime();
    boolean journaled;
    State state;
    int attempts;

    Entry(KnownOutcome outcome, boolean journaled, State state) {
      this.outcome = outcome;
      this.journaled = journaled;
      this.state = state;
    }

    UUID id() {
      return outcome.settle().id();
    }
  }

  private final GatewayConfig.Retry config;
  private final Path journalDir;
  private final OutcomeJournal.Opener opener;
  private final Backoff backoff;
  private final Map<UUID, Entry> held = new HashMap<>();
  /**
   * Rows the relay contract is delivering (docs/design.md §8.1): added from any event loop before the open, removed
   * when the settle commits, or on this part's loop once a hand-over is held, so a row is always in one or the other.
   */
  private final Set<UUID> delivering = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final ArrayDeque<Entry> ready = new ArrayDeque<>();
  private final AtomicLong settled = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong parked = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong attempts = new AtomicLong();
  private final AtomicLong failedAttempts = new AtomicLong();
  /** Not-sent outcomes closed: their row settled FAILED_TEMP 4.3.0, or no row (the open never committed). */
  private final AtomicLong notSentClosed = new AtomicLong();
  private volatile int heldCount;
  /** Outcomes handed over (their first settle failed) and not yet in the ledger: the settle backlog. */
  private volatile int backlogCount;
  private Bus bus;
  private OutcomeJournal journal;
  private int inFlight;
  private int failures;
  private long pauseTimer = -1;
  private boolean stopping;
  private Promise<Void> drained;

  public RetryVerticle(GatewayConfig.Retry config, Path journalDir) {
    this(config, journalDir, OutcomeJournal.Opener.APPEND);
  }

  RetryVerticle(GatewayConfig.Retry config, Path journalDir, OutcomeJournal.Opener opener) {
    this.config = config;
    this.journalDir = journalDir;
    this.opener = opener;
    this.backoff = new Backoff(config.initialBackoff(), config.maxBackoff());
  }

  /** {@code retry.journalDir}, or {@code journal} next to the embedded database's directory (data/journal). */
  public static Path journalDir(GatewayConfig config) {
    if (!config.retry().journalDir().isBlank()) {
      return Path.of(config.retry().journalDir()).toAbsolutePath();
    }
    return Path.of(config.ledger().dataDir()).toAbsolutePath().getParent().resolve("journal");
  }

  @Override
  public Future<?> start() {
    bus = Bus.of(vertx);
    journal = new OutcomeJournal(vertx, journalDir, config.journalCompactSize(), opener);
    return journal.recover().map(recovery -> {
      bus.serve(RetryMessages.HELD, HeldQuery.class, q -> Future.succeededFuture(new HeldOutcomes(Set.copyOf(held.keySet()),
          Set.copyOf(delivering))));
      for (KnownOutcome o : recovery.open()) {
        Entry e = new Entry(o, true, State.QUEUED);
        held.put(e.id(), e);
        ready.add(e);
      }
      if (!recovery.open().isEmpty()) {
        LOG.info("replaying {} known outcomes from the outcome journal into the ledger", recovery.open().size());
      }
      LOG.info("retry part ready; outcome journal {}", journal.file());
      changed();
      pump();
      return null;
    });
  }

  // The relay contract's direct calls (OutcomeKeeper): from any event loop onto this part's own.

  /** Straight to the journal, which is thread-safe: the hot path costs no hop through this part's loop. */
  @Override
  public Future<Boolean> journal(KnownOutcome outcome) {
    return journal.append(outcome);
  }

  @Override
  public void delivering(UUID id) {
    delivering.add(id);
  }

  @Override
  public void deliveryAbandoned(UUID id) {
    delivering.remove(id);
  }

  @Override
  public void settled(UUID id) {
    journal.settled(id);
    delivering.remove(id); // settled: no longer PENDING, nothing to keep from the stale watch
  }

  @Override
  public void handOver(KnownOutcome outcome, boolean journaled) {
    Hop.send(context, () -> {
      UUID id = outcome.settle().id();
      if (journaled && !held.containsKey(id)) {
        held.put(id, new Entry(outcome, true, State.DELIVERING)); // on disk already: the hand-over only queues it
      }
      handOverOnLoop(outcome);
      delivering.remove(id); // only now: retry.held, answered on this loop, sees it in one set or the other
    });
  }

  /** The delivery part's settle failed: from now on this part owns the outcome. */
  private void handOverOnLoop(KnownOutcome o) {
    UUID id = o.settle().id();
    Entry e = held.get(id);
    if (e == null) {
      // Not journaled (the journal failed, or this is a late duplicate of one already done): journal it
      // now, best effort, and retry it either way.
      Entry fresh = new Entry(o, false, State.JOURNALING);
      held.put(id, fresh);
      changed();
      journal.append(o).onComplete(ar -> {
        if (ar.succeeded()) {
          fresh.journaled = true;
          if (held.get(id) != fresh) {
            journal.markDone(id);
          }
        } else {
          AuditLog.of(AuditEvent.KNOWN_OUTCOME_NOT_JOURNALED).with("message_id", id)
              .with("target_status", o.settle().target()).with("error", ar.cause().getMessage()).log();
        }
        if (held.get(id) == fresh) {
          enqueue(fresh);
        }
      });
      return;
    }
    if (e.state == State.DELIVERING) {
      if (!e.outcome.equals(o)) {
        LOG.warn("hand-over of {} differs from the journaled outcome; the journaled one is retried", id);
      }
      enqueue(e);
      return;
    }
    duplicates.incrementAndGet();
    LOG.debug("duplicate hand-over of {} ignored ({})", id, e.state);
  }

  private void enqueue(Entry e) {
    e.state = State.QUEUED;
    ready.add(e);
    changed(); // it left DELIVERING: from now on it is settle backlog
    pump();
  }

  private void pump() {
    if (stopping) {
      return;
    }
    int limit = failures > 0 ? 1 : config.concurrency();
    while (pauseTimer < 0 && inFlight < limit && !ready.isEmpty()) {
      settle(ready.poll());
    }
  }

  private void settle(Entry e) {
    e.state = State.SETTLING;
    e.attempts++;
    attempts.incrementAndGet();
    inFlight++;
    persist(e.outcome).onComplete(ar -> {
      inFlight--;
      if (held.get(e.id()) == e) {
        if (ar.succeeded()) {
          failures = 0;
          if (e.outcome.notSent()) {
            notSentClosed.incrementAndGet();
            AuditLog.of(AuditEvent.NOT_SENT_CLOSED).with("message_id", e.id()).with("msg_id", e.outcome.messageIdHeader())
                .with("row", ar.result() == null ? "none" : ar.result().status()).with("key_released", e.outcome.key() != null)
                .with("attempts", e.attempts).with("held_ms", (System.nanoTime() - e.since) / 1_000_000).log();
          } else {
            settled.incrementAndGet();
            AuditLog.of(AuditEvent.DELIVERY_RESULT_PERSISTED).with("message_id", e.id())
                .with("msg_id", e.outcome.messageIdHeader()).with("status", ar.result().status())
                .with("version", ar.result().version()).with("attempts", e.attempts)
                .with("held_ms", (System.nanoTime() - e.since) / 1_000_000).with("via", "retry").log();
          }
          finish(e);
        } else {
          failed(e, ar.cause());
        }
      }
      if (stopping && inFlight == 0 && drained != null) {
        drained.tryComplete();
      }
      pump();
    });
  }

  /**
   * The versioned settle. For a not-sent outcome, no row means the open never committed (done, with a
   * null result), and the send's Idempotency-Key is released afterwards; both steps are idempotent, so
   * a failure of either re-runs both.
   */
  private Future<Settled> persist(KnownOutcome o) {
    Future<Settled> settle = bus.request(LedgerMessages.SETTLE, o.settle(), Settled.class);
    if (!o.notSent()) {
      return settle;
    }
    Future<Settled> closed = settle.recover(err -> err instanceof StoreException le && le.kind() == StoreException.Kind.NOT_FOUND
        ? Future.succeededFuture(null)
        : Future.failedFuture(err));
    if (o.key() == null) {
      return closed;
    }
    return closed.compose(s -> bus.request(IdempotencyMessages.RELEASE, new IdempotencyMessages.Release(o.key()),
        IdempotencyMessages.Done.class).map(d -> s));
  }

  private void failed(Entry e, Throwable cause) {
    StoreException.Kind kind = cause instanceof StoreException le ? le.kind() : null;
    if (kind == StoreException.Kind.STALE) {
      // A newer fact exists (settled by another path, or resolved by an operator): it wins.
      failures = 0;
      dropped.incrementAndGet();
      LOG.warn("known outcome {} of {} (Message-ID {}) dropped: {}", e.outcome.settle().target(), e.id(),
          e.outcome.messageIdHeader(), cause.getMessage());
      finish(e);
      return;
    }
    if (kind == StoreException.Kind.NOT_FOUND || kind == StoreException.Kind.BAD_REQUEST) {
      // Retrying cannot help. The fact stays in the journal (replayed at the next start) and in the log.
      failures = 0;
      parked.incrementAndGet();
      e.state = State.PARKED;
      AuditLog.of(AuditEvent.KNOWN_OUTCOME_UNSETTLEABLE).with("message_id", e.id())
          .with("msg_id", e.outcome.messageIdHeader()).with("target_status", e.outcome.settle().target())
          .with("downstream_accepted", e.outcome.downstreamAccepted()).with("error", cause.getMessage()).log();
      return;
    }
    failedAttempts.incrementAndGet();
    e.state = State.QUEUED;
    ready.addFirst(e);
    if (pauseTimer >= 0) {
      return; // already backing off; failures of settles that were in flight together count once
    }
    failures++;
    long delay = backoff.delayMillis(failures, ThreadLocalRandom.current().nextDouble());
    LOG.warn("settle retry of {} failed (attempt {}): {}; next attempt in {} ms, {} outcomes held", e.id(), e.attempts,
        cause.getMessage(), delay, held.size());
    pauseTimer = vertx.setTimer(delay, t -> {
      pauseTimer = -1;
      pump();
    });
  }

  private void finish(Entry e) {
    held.remove(e.id());
    if (e.journaled) {
      journal.markDone(e.id());
    }
    changed();
  }

  private void changed() {
    heldCount = held.size();
    int backlog = 0;
    for (Entry e : held.values()) {
      if (e.state != State.DELIVERING) {
        backlog++;
      }
    }
    backlogCount = backlog;
  }

  /** For the metrics part: read from any thread. */
  public int backlog() {
    return backlogCount;
  }

  /** Lets settles in flight finish (each is bounded by the ledger's own policy), then closes the journal. */
  @Override
  public Future<?> stop() {
    stopping = true;
    if (pauseTimer >= 0) {
      vertx.cancelTimer(pauseTimer);
      pauseTimer = -1;
    }
    drained = Promise.promise();
    if (inFlight == 0) {
      drained.complete();
    }
    return drained.future().compose(v -> journal == null ? Future.succeededFuture() : journal.close()).onComplete(ar -> {
      long journaled = held.values().stream().filter(e -> e.journaled).count();
      if (journaled > 0) {
        LOG.warn("stopping with {} known outcomes not yet in the ledger; they stay in the journal and are settled at the "
            + "next start", journaled);
      }
      held.values().stream().filter(e -> !e.journaled).forEach(e -> AuditLog.of(AuditEvent.KNOWN_OUTCOME_LOST_AT_STOP)
          .with("message_id", e.id()).with("msg_id", e.outcome.messageIdHeader())
          .with("target_status", e.outcome.settle().target()).with("downstream_accepted", e.outcome.downstreamAccepted())
          .log());
    });
  }

  public Stats stats() {
    OutcomeJournal.Stats j = journal == null ? new OutcomeJournal.Stats(0, 0, 0, 0, 0, 0) : journal.stats();
    return new Stats(heldCount, settled.get(), dropped.get(), parked.get(), duplicates.get(), attempts.get(),
        failedAttempts.get(), j.appends(), j.syncs(), j.compactions(), j.open(), j.bytes(), notSentClosed.get());
  }

}
