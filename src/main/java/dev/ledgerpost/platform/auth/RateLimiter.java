package dev.ledgerpost.platform.auth;

import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * One token bucket per key (a send API key, an SMTP user): {@code rate} tokens a second, holding at
 * most {@code capacity} (by default one second's worth, at least one), so a client may burst up to that
 * and is then paced. Thread-safe: one instance may serve every event loop.
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
  public long acquire(String key, double rate) {
    return acquire(key, rate, Math.max(1.0, rate));
  }

  /** As {@link #acquire(String, double)}, with a bucket of {@code capacity} tokens (at least one). */
  public synchronized long acquire(String key, double rate, double capacity) {
    capacity = Math.max(1.0, capacity);
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
