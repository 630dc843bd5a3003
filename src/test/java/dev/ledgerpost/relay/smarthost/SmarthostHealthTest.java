package dev.ledgerpost.relay.smarthost;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig.Smarthost;
import dev.ledgerpost.testing.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The order smarthosts are tried in, and how long a host that could not be reached waits behind the others. */
class SmarthostHealthTest {
  static final Smarthost A = new Smarthost("127.0.0.1", 2001);
  static final Smarthost B = new Smarthost("127.0.0.1", 2002);
  static final Smarthost C = new Smarthost("127.0.0.1", 2003);

  final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  final SmarthostHealth health = new SmarthostHealth(List.of(A, B, C), Duration.ofSeconds(30), Duration.ofMinutes(5), clock);

  @Test
  void allAnsweringMeansTheConfiguredOrder() {
    assertThat(health.order()).containsExactly(A, B, C);
    assertThat(health.preferred()).isEqualTo(A);
  }

  @Test
  void aFailedHostGoesBehindTheOthersForItsBackoffAsTheOnlyLastResort() {
    health.failed(A, "Connection refused");
    assertThat(health.order()).containsExactly(B, C, A);
    assertThat(health.preferred()).isEqualTo(B);
    health.failed(B, "421 4.3.2 busy");
    // Both in back-off: only the one whose back-off ends first is tried after C, not every host.
    assertThat(health.order()).containsExactly(C, A);
    health.failed(C, "timed out");
    assertThat(health.order()).containsExactly(A);

    clock.advance(Duration.ofSeconds(30));
    assertThat(health.order()).containsExactly(A, B, C);
    assertThat(health.backingOff(A)).isFalse();
  }

  @Test
  void theBackoffDoublesPerFailedRoundUpToTheCeilingAndAnAnswerEndsIt() {
    long[] expected = {30, 60, 120, 240, 300, 300};
    for (long seconds : expected) {
      health.failed(A, "refused");
      clock.advance(Duration.ofSeconds(seconds).minusMillis(1));
      assertThat(health.backingOff(A)).as("%d s back-off, 1 ms before its end", seconds).isTrue();
      clock.advance(Duration.ofMillis(1));
      assertThat(health.backingOff(A)).as("%d s back-off at its end", seconds).isFalse();
    }
    health.answered(A);
    health.failed(A, "refused");
    clock.advance(Duration.ofSeconds(30));
    assertThat(health.backingOff(A)).as("an answer starts the count again").isFalse();
  }

  @Test
  void failuresDuringTheBackoffDoNotLengthenIt() {
    health.failed(A, "refused");
    clock.advance(Duration.ofSeconds(10));
    for (int i = 0; i < 50; i++) {
      health.failed(A, "refused"); // a burst of clients that tried it before the first failure was known
    }
    clock.advance(Duration.ofSeconds(20));
    assertThat(health.backingOff(A)).isFalse();
  }

  @Test
  void aClockSteppedBackKeepsAHostOutNoLongerThanTheCeiling() {
    health.failed(A, "refused");
    clock.advance(Duration.ofHours(-1));
    assertThat(health.backingOff(A)).isFalse();
    assertThat(health.order()).containsExactly(A, B, C);
  }
}
