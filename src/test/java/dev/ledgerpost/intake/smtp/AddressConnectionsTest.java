package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Race;
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
    Race.run(8, 20_000, () -> {
      if (limit.tryOpen("a")) {
        admitted.incrementAndGet();
        maxSeen.accumulateAndGet(inside.incrementAndGet(), Math::max);
        inside.decrementAndGet();
        limit.closed("a");
      }
    });
    assertThat(admitted.get()).isPositive();
    assertThat(maxSeen.get()).isLessThanOrEqualTo(5);
    assertThat(limit.open("a")).isZero();
  }
}
