package dev.ledgerpost.intake.smtp.auth;

import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.auth.RateLimiter;

/**
 * {@code auth.rateLimit}: messages per minute per authenticated SMTP user, a token bucket holding one
 * minute's worth, so a leaked password cannot send without bound. A token is taken at MAIL (as Postfix's
 * anvil counts message delivery requests). One instance per process, shared by every event loop.
 */
public final class UserQuota {
  public static final UserQuota UNLIMITED = new UserQuota(0, GatewayMetrics.NOOP, new RateLimiter());

  private final int perMinute;
  private final GatewayMetrics metrics;
  private final RateLimiter buckets;

  public UserQuota(int perMinute, GatewayMetrics metrics) {
    this(perMinute, metrics, new RateLimiter());
  }

  UserQuota(int perMinute, GatewayMetrics metrics, RateLimiter buckets) {
    this.perMinute = perMinute;
    this.metrics = metrics;
    this.buckets = buckets;
  }

  /** Takes one message from the user's quota; false: over it (451 4.7.1). Keys are users of the users file: bounded. */
  public boolean tryTake(String user) {
    if (perMinute <= 0) {
      return true;
    }
    boolean allowed = buckets.acquire(user, perMinute / 60.0, perMinute) == 0;
    metrics.userRateLimit(allowed ? GatewayMetrics.RateLimit.ALLOWED : GatewayMetrics.RateLimit.LIMITED);
    return allowed;
  }
}
