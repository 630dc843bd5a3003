package dev.ledgerpost.relay.smarthost;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process-wide cap on open smarthost connections ({@code downstream.maxConnections}), shared by
 * every relay (each SMTP event loop's and the send API's): one instance per process, thread-safe. A
 * connection takes a slot before it is opened and gives it back when its socket closes, so a burst of
 * slow clients cannot hold more smarthost connections than the cap (Postfix's anvil is the model).
 */
public final class DownstreamSlots {
  private static final Logger LOG = LoggerFactory.getLogger(DownstreamSlots.class);
  /** An unreachable smarthost is logged at most once per this period per process, however many clients hear 451 4.4.1. */
  static final long UNREACHABLE_LOG_PERIOD_NANOS = TimeUnit.MINUTES.toNanos(1);

  /** The cap is reached: nothing was opened. Intake answers 451 4.7.0 (busy), not 4.4.1 (unreachable). */
  public static final class Exhausted extends DownstreamUnavailable {
    Exhausted(int max) {
      super("all " + max + " smarthost connections (downstream.maxConnections) are in use", null);
    }
  }

  /** A held slot. Releasing is idempotent: the close of a socket and a failed open may both report it. */
  public static final class Slot {
    private final DownstreamSlots owner;
    private final AtomicBoolean held = new AtomicBoolean(true);

    private Slot(DownstreamSlots owner) {
      this.owner = owner;
    }

    public void release() {
      if (held.compareAndSet(true, false)) {
        owner.inUse.decrementAndGet();
      }
    }
  }

  private final int max;
  private final AtomicInteger inUse = new AtomicInteger();
  private final AtomicLong nextUnreachableLog = new AtomicLong(System.nanoTime());
  private final AtomicLong unreachableSinceLog = new AtomicLong();

  public DownstreamSlots(int max) {
    if (max <= 0) {
      throw new IllegalArgumentException("max must be positive: " + max);
    }
    this.max = max;
  }

  /** A slot, or null when all are taken. */
  public Slot tryAcquire() {
    while (true) {
      int n = inUse.get();
      if (n >= max) {
        return null;
      }
      if (inUse.compareAndSet(n, n + 1)) {
        return new Slot(this);
      }
    }
  }

  /** Slots held now: open connections, in use or idle in a pool. */
  public int inUse() {
    return inUse.get();
  }

  /** True when the next open would be refused: a pool then closes a finished connection instead of keeping it idle. */
  public boolean full() {
    return inUse.get() >= max;
  }

  public int max() {
    return max;
  }

  /**
   * A connection to the smarthost could not be opened: clients hear 451 4.4.1 and retry, and without a log line
   * an operator would not know why mail stopped. One WARN per minute at most (every event loop and the send API
   * share this), with how many failures it stands for.
   */
  public void unreachable(String target, Throwable cause) {
    long failures = unreachableSinceLog.incrementAndGet();
    long now = System.nanoTime();
    long next = nextUnreachableLog.get();
    if (now - next >= 0 && nextUnreachableLog.compareAndSet(next, now + UNREACHABLE_LOG_PERIOD_NANOS)) {
      unreachableSinceLog.addAndGet(-failures);
      String why = cause == null || cause.getMessage() == null ? String.valueOf(cause) : cause.getMessage();
      LOG.warn("downstream {} unreachable: {}; clients hear 451 4.4.1 ({} failed connection attempt(s) since the last such "
          + "line; at most one line a minute)", target, why, failures);
    }
  }
}
