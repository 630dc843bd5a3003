package dev.ledgerpost.testing;

import java.time.Duration;
import java.util.concurrent.Callable;

/** Waiting for a condition with a deadline: the only way tests wait for something asynchronous. */
public final class Poll {
  /** The first pause between two tries: what was about to happen is seen at once. */
  private static final long FIRST_PAUSE_MS = 10;
  /**
   * The longest pause: a wait of seconds (a heartbeat, a retry's back-off, a child JVM's start) is then tried ten times
   * a second, not a hundred. Many conditions are ledger queries, and on the suite's saturated 2 cores each try is CPU
   * that the tests beside it wait for.
   */
  private static final long LONGEST_PAUSE_MS = 100;

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
    long pause = FIRST_PAUSE_MS;
    while (!Boolean.TRUE.equals(condition.call())) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(pause); // polling with a deadline
      pause = Math.min(LONGEST_PAUSE_MS, pause * 3 / 2);
    }
    return true;
  }
}
