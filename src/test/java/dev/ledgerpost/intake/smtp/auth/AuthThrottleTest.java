package dev.ledgerpost.intake.smtp.auth;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.observability.MicrometerGatewayMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The throttle on a fake clock: delays that double, bans per address only, expiry, and a bounded table. */
class AuthThrottleTest {
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final AuthThrottle throttle = new AuthThrottle(
      new AuthThrottle.Settings(Duration.ofMillis(100), 4, Duration.ofSeconds(60)),
      new MicrometerGatewayMetrics(registry), now::get, 1000);

  private void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  private double failures(String result) {
    return registry.get("ledgerpost.auth.failures").tag("result", result).counter().count();
  }

  @Test
  void theDelayDoublesPerFailureOfTheAddressAndTheFourthFailureBansIt() {
    assertThat(throttle.failed("198.51.100.1", "u1").delay()).isEqualTo(Duration.ofMillis(100));
    assertThat(throttle.failed("198.51.100.1", "u2").delay()).isEqualTo(Duration.ofMillis(200));
    assertThat(throttle.failed("198.51.100.1", "u3").delay()).isEqualTo(Duration.ofMillis(400));
    assertThat(throttle.banned("198.51.100.1")).isFalse();
    AuthThrottle.Penalty fourth = throttle.failed("198.51.100.1", "u4");
    assertThat(fourth.delay()).isEqualTo(Duration.ofMillis(800));
    assertThat(fourth.banBegan()).isTrue();
    assertThat(throttle.banned("198.51.100.1")).isTrue();
    assertThat(throttle.banned("198.51.100.2")).isFalse();
    assertThat(throttle.mayAttempt("198.51.100.1")).isFalse();
    assertThat(throttle.bannedAddresses()).isEqualTo(1);
    assertThat(failures("rejected")).isEqualTo(3);
    assertThat(failures("banned")).isEqualTo(1);
    assertThat(failures("refused")).isEqualTo(1);
  }

  @Test
  void theBanEndsAfterTheWindowAndTheCountStartsOver() {
    for (int i = 0; i < 4; i++) {
      throttle.failed("198.51.100.1", "u" + i);
    }
    advance(Duration.ofSeconds(59));
    assertThat(throttle.banned("198.51.100.1")).isTrue();
    advance(Duration.ofSeconds(1));
    assertThat(throttle.banned("198.51.100.1")).isFalse();
    assertThat(throttle.mayAttempt("198.51.100.1")).isTrue();
    assertThat(throttle.bannedAddresses()).isZero();
    assertThat(throttle.failed("198.51.100.1", "v").delay()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void aFailureInFlightWhenTheBanBeganDoesNotProlongIt() {
    for (int i = 0; i < 4; i++) {
      throttle.failed("198.51.100.1", "u" + i);
    }
    advance(Duration.ofSeconds(30));
    AuthThrottle.Penalty late = throttle.failed("198.51.100.1", "late");
    assertThat(late.banBegan()).isFalse();
    advance(Duration.ofSeconds(30));
    assertThat(throttle.banned("198.51.100.1")).isFalse();
  }

  @Test
  void aUserNameUnderAttackFromManyAddressesGetsAGrowingDelayButIsNeverBanned() {
    Duration last = Duration.ZERO;
    for (int i = 1; i <= 12; i++) {
      Duration d = throttle.failed("203.0.113." + i, "alice").delay();
      assertThat(d).isGreaterThanOrEqualTo(last);
      last = d;
      assertThat(throttle.banned("203.0.113." + i)).isFalse();
    }
    // 100 ms doubled, but no further than 32 times.
    assertThat(last).isEqualTo(Duration.ofMillis(100).multipliedBy(32));
    assertThat(throttle.bannedAddresses()).isZero();
  }

  @Test
  void failuresAreForgottenAWindowAfterTheLastOne() {
    throttle.failed("198.51.100.1", "x");
    throttle.failed("198.51.100.1", "y");
    advance(Duration.ofSeconds(61));
    assertThat(throttle.failed("198.51.100.1", "z").delay()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void manyAddressesAndNamesCannotGrowTheTablesBeyondTheirCapacity() {
    for (int i = 0; i < 50_000; i++) {
      throttle.failed("10." + (i >> 16) + "." + ((i >> 8) & 255) + "." + (i & 255), "user" + i);
    }
    assertThat(throttle.size()).isLessThanOrEqualTo(2 * 1000);
    // The oldest went first: the most recent address is still counted, the first one is not.
    assertThat(throttle.failed("10.0.195.79", "again").delay()).isEqualTo(Duration.ofMillis(200));
    assertThat(throttle.failed("10.0.0.0", "again2").delay()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void offNeverDelaysNorBans() {
    AuthThrottle off = AuthThrottle.off();
    for (int i = 0; i < 20; i++) {
      assertThat(off.failed("198.51.100.1", "u").delay()).isZero();
    }
    assertThat(off.banned("198.51.100.1")).isFalse();
  }
}
