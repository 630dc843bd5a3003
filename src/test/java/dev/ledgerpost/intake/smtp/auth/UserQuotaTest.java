package dev.ledgerpost.intake.smtp.auth;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.observability.MicrometerGatewayMetrics;
import dev.ledgerpost.platform.auth.RateLimiter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class UserQuotaTest {
  private final AtomicLong now = new AtomicLong();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @Test
  void aMinutesWorthBurstsThenOneMessagePerSixtiethOfTheRate() {
    UserQuota quota = new UserQuota(6, new MicrometerGatewayMetrics(registry), new RateLimiter(now::get));
    for (int i = 0; i < 6; i++) {
      assertThat(quota.tryTake("alice")).as("message %d", i).isTrue();
    }
    assertThat(quota.tryTake("alice")).isFalse();
    assertThat(quota.tryTake("bob")).as("each user has a bucket").isTrue();
    now.addAndGet(TimeUnit.SECONDS.toNanos(9));
    assertThat(quota.tryTake("alice")).isFalse();
    now.addAndGet(TimeUnit.SECONDS.toNanos(1)); // 6 a minute: one every 10 s
    assertThat(quota.tryTake("alice")).isTrue();
    assertThat(registry.get("ledgerpost.auth.rate.limit").tag("outcome", "allowed").counter().count()).isEqualTo(8);
    assertThat(registry.get("ledgerpost.auth.rate.limit").tag("outcome", "limited").counter().count()).isEqualTo(2);
  }

  @Test
  void zeroIsUnlimited() {
    UserQuota quota = new UserQuota(0, new MicrometerGatewayMetrics(registry), new RateLimiter(now::get));
    for (int i = 0; i < 10_000; i++) {
      assertThat(quota.tryTake("alice")).isTrue();
    }
  }
}
