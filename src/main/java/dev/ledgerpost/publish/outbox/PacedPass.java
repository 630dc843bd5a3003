package dev.ledgerpost.publish.outbox;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A pass over what the outbox published (the relay's publishing, the webhooks' recording) that never overlaps itself
 * and starts at most every {@code minMillis}: asked while one runs, it runs once more right after; asked too soon, it
 * runs when the gap has passed, and the asks in between coalesce. Under load a pass then takes what several commits
 * wrote. A pass answers whether there is more to do at once; a failed one is left to the caller's poll. One per
 * verticle, used on its context only.
 */
public final class PacedPass {
  private final Vertx vertx;
  private final long minMillis;
  private final boolean moreSkipsGap;
  private final BooleanSupplier wanted;
  private final Supplier<Future<Boolean>> pass;
  private boolean running;
  private boolean again;
  private boolean paced;
  private boolean more;
  private long lastStart;

  /**
   * @param moreSkipsGap whether a pass that answered "more" lets the next one start without waiting for the gap
   * @param wanted asked before every start: false (stopped, or not this node's job) and the ask is dropped
   */
  public PacedPass(Vertx vertx, long minMillis, boolean moreSkipsGap, BooleanSupplier wanted, Supplier<Future<Boolean>> pass) {
    this.vertx = vertx;
    this.minMillis = minMillis;
    this.moreSkipsGap = moreSkipsGap;
    this.wanted = wanted;
    this.pass = pass;
    this.lastStart = System.nanoTime() - minMillis * 1_000_000;
  }

  /** Runs a pass now, right after the one in progress, or once the gap has passed. */
  public void run() {
    if (!wanted.getAsBoolean()) {
      return;
    }
    if (running) {
      again = true;
      return;
    }
    long wait = minMillis - (System.nanoTime() - lastStart) / 1_000_000;
    if (wait > 0 && !(moreSkipsGap && more)) {
      if (!paced) {
        paced = true;
        vertx.setTimer(wait, t -> {
          paced = false;
          run();
        });
      }
      return;
    }
    lastStart = System.nanoTime();
    running = true;
    again = false;
    pass.get().onComplete(ar -> {
      running = false;
      if (ar.failed()) {
        return;
      }
      more = ar.result();
      if (more || again) {
        run();
      }
    });
  }
}
