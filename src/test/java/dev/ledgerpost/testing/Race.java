package dev.ledgerpost.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/** Threads released at once to hammer one shared object, as the event loops of a gateway do. */
public final class Race {
  private Race() {}

  /** Runs {@code round} {@code rounds} times on each of {@code threads} threads, all started together; waits for them. */
  public static void run(int threads, int rounds, Runnable round) throws InterruptedException {
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> started = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread th = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < rounds; i++) {
          round.run();
        }
      });
      th.start();
      started.add(th);
    }
    go.countDown();
    for (Thread th : started) {
      th.join(60_000);
    }
  }
}
