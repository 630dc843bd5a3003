package dev.ledgerpost.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AddressConnectionsTest {

  @Test
  void eachAddressHasItsOwnCountAndAClosedConnectionFreesItsPlace() {
    AddressConnections limit = new AddressConnections(2);
    assertThat(limit.tryOpen("a")).isTrue();
    assertThat(limit.tryOpen("a")).isTrue();
    assertThat(limit.tryOpen("a")).isFalse();
    assertThat(limit.tryOpen("b")).isTrue();
    limit.closed("a");
    assertThat(limit.tryOpen("a")).isTrue();
    assertThat(limit.open("a")).isEqualTo(2);
  }

  @Test
  void threadsRacingForOneAddressNeverExceedTheLimitAndTheMapEmptiesAgain() throws Exception {
    AddressConnections limit = new AddressConnections(5);
    AtomicInteger admitted = new AtomicInteger();
    AtomicInteger maxSeen = new AtomicInteger();
    AtomicInteger inside = new AtomicInteger();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      Thread th = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < 20_000; i++) {
          if (limit.tryOpen("a")) {
            admitted.incrementAndGet();
            maxSeen.accumulateAndGet(inside.incrementAndGet(), Math::max);
            inside.decrementAndGet();
            limit.closed("a");
          }
        }
      });
      th.start();
      threads.add(th);
    }
    go.countDown();
    for (Thread th : threads) {
      th.join(60_000);
    }
    assertThat(admitted.get()).isPositive();
    assertThat(maxSeen.get()).isLessThanOrEqualTo(5);
    assertThat(limit.open("a")).isZero();
  }
}
