package dev.ledgerpost.testing;

import java.time.Duration;
import java.util.concurrent.Callable;

/** Waiting for a condition with a deadline: the only way tests wait for something asynchronous. */
public final class Poll {
  private Poll() {}

  public static void until(Duration within, String what, Callable<Boolean> condition) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    while (!Boolean.TRUE.equals(condition.call())) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + within + ": " + what);
      }
      Thread.sleep(10); // polling with a deadline
    }
  }
}
