package dev.ledgerpost.publish.webhook;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code webhooks.retrySchedule}: the delay before each attempt of a round (the first from when the event is
 * recorded, each next from the failed attempt before it). Each delay is lengthened by up to {@link #JITTER} at
 * random, never shortened, so that deliveries that failed together do not all come back at once, and no attempt
 * comes earlier than the schedule says. A receiver's {@code Retry-After} (on 429 or 503) may push the next
 * attempt later, never earlier, up to {@link #MAX_RETRY_AFTER}.
 */
final class Schedule {
  static final double JITTER = 0.10;
  static final Duration MAX_RETRY_AFTER = Duration.ofHours(24);

  private final List<Duration> delays;

  Schedule(List<Duration> delays) {
    this.delays = List.copyOf(delays);
  }

  /** Attempts in one round. */
  int attempts() {
    return delays.size();
  }

  /** When the first attempt of a newly recorded delivery is due. */
  Instant firstDue(Instant recorded) {
    return recorded.plus(jittered(delays.get(0)));
  }

  /**
   * When attempt {@code done + 1} of the round is due, after attempt {@code done} failed at {@code now}; null when
   * {@code done} was the round's last: the delivery is FAILED.
   */
  Instant next(int done, Instant now, Duration retryAfter) {
    if (done >= delays.size()) {
      return null;
    }
    Instant scheduled = now.plus(jittered(delays.get(done)));
    if (retryAfter != null) {
      Duration honoured = retryAfter.compareTo(MAX_RETRY_AFTER) > 0 ? MAX_RETRY_AFTER : retryAfter;
      Instant asked = now.plus(honoured);
      if (asked.isAfter(scheduled)) {
        return asked;
      }
    }
    return scheduled;
  }

  /** The delay before attempt {@code n + 1} as configured, without jitter (for the bounds tests check). */
  Duration delay(int n) {
    return delays.get(n);
  }

  static Duration jittered(Duration d) {
    if (d.isZero()) {
      return d;
    }
    long extra = (long) (d.toMillis() * JITTER * ThreadLocalRandom.current().nextDouble());
    return d.plusMillis(extra);
  }
}
