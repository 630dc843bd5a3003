package dev.ledgerpost.send;

import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * One token bucket per API key: {@code rate} tokens a second, holding at most one second's worth
 * (at least one), so a client may burst up to its rate and is then paced.
 */
public final class RateLimiter {
  private static final class Bucket {
    double tokens;
    long lastNanos;
  }

  private final LongSupplier nanos;
  private final Map<String, Bucket> buckets = new HashMap<>();

  public RateLimiter(LongSupplier nanos) {
    this.nanos = nanos;
  }

  public RateLimiter() {
    this(System::nanoTime);
  }

  /** Takes a token: 0 when the request may go ahead, else whole seconds until one is available (Retry-After). */
  public synchronized long acquire(String key, double rate) {
    double capacity = Math.max(1.0, rate);
    long now = nanos.getAsLong();
    Bucket b = buckets.get(key);
    if (b == null) {
      b = new Bucket();
      b.tokens = capacity;
      b.lastNanos = now;
      buckets.put(key, b);
    }
    double elapsed = Math.max(0, now - b.lastNanos) / 1e9;
    b.tokens = Math.min(capacity, b.tokens + elapsed * rate);
    b.lastNanos = now;
    if (b.tokens >= 1.0) {
      b.tokens -= 1.0;
      return 0;
    }
    return Math.max(1, (long) Math.ceil((1.0 - b.tokens) / rate));
  }
}
