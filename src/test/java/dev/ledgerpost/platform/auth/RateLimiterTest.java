package dev.ledgerpost.platform.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RateLimiterTest {
  final AtomicLong now = new AtomicLong(1_000_000_000L);
  final RateLimiter limiter = new RateLimiter(now::get);

  @Test
  void aKeyMayBurstUpToItsRateThenIsPaced() {
    for (int i = 0; i < 5; i++) {
      assertThat(limiter.acquire("k", 5)).isZero();
    }
    assertThat(limiter.acquire("k", 5)).isEqualTo(1);
    now.addAndGet(200_000_000L); // one token at 5/s
    assertThat(limiter.acquire("k", 5)).isZero();
    assertThat(limiter.acquire("k", 5)).isEqualTo(1);
  }

  @Test
  void slowRatesAnswerWithTheWholeWait() {
    assertThat(limiter.acquire("slow", 0.01)).isZero();
    assertThat(limiter.acquire("slow", 0.01)).isEqualTo(100);
    now.addAndGet(50_000_000_000L);
    assertThat(limiter.acquire("slow", 0.01)).isEqualTo(50);
  }

  @Test
  void keysHaveTheirOwnBuckets() {
    assertThat(limiter.acquire("a", 1)).isZero();
    assertThat(limiter.acquire("a", 1)).isEqualTo(1);
    assertThat(limiter.acquire("b", 1)).isZero();
  }
}
