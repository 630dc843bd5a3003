package dev.ledgerpost.delivery;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The process-wide cap on open smarthost connections ({@code downstream.maxConnections}), shared by
 * every relay (each SMTP event loop's and the send API's): one instance per process, thread-safe. A
 * connection takes a slot before it is opened and gives it back when its socket closes, so a burst of
 * slow clients cannot hold more smarthost connections than the cap (Postfix's anvil is the model).
 */
public final class DownstreamSlots {

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
}
