package dev.ledgerpost.testing;

import java.time.Duration;
import java.util.concurrent.Callable;

/** Waiting for a condition with a deadline: the only way tests wait for something asynchronous. */
public final class Poll {
  private Poll() {}

  /** Waits until {@code condition} holds; fails the test, saying {@code what}, when it does not within the deadline. */
  public static void until(Duration within, String what, Callable<Boolean> condition) throws Exception {
    if (!within(within, condition)) {
      throw new AssertionError("not within " + within + ": " + what);
    }
  }

  /** Whether {@code condition} holds within the deadline: for a caller that says itself what a timeout means. */
  public static boolean within(Duration within, Callable<Boolean> condition) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    while (!Boolean.TRUE.equals(condition.call())) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(10); // polling with a deadline
    }
    return true;
  }
}
