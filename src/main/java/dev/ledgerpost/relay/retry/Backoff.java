package dev.ledgerpost.relay.retry;

import java.time.Duration;

/**
 * Exponential backoff with "equal jitter": after the n-th failure in a row the pause is drawn from
 * [d/2, d] with d = initial x 2^(n-1), capped at max. Half of it is fixed (the pause really grows),
 * half random (several gateways on one database do not probe in step).
 */
record Backoff(Duration initial, Duration max) {

  /** {@code random} in [0, 1). */
  long delayMillis(int failures, double random) {
    long cap = Math.max(1, max.toMillis());
    long first = Math.min(cap, Math.max(1, initial.toMillis()));
    int doublings = Math.min(Math.max(failures, 1) - 1, 40);
    long d = first;
    for (int i = 0; i < doublings && d < cap; i++) {
      d = Math.min(cap, d * 2);
    }
    return Math.max(1, Math.min(cap, Math.round(d * (0.5 + 0.5 * random))));
  }
}
