package dev.ledgerpost.platform.observability;

import dev.ledgerpost.platform.observability.GatewayMetrics.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The opt-in per-user counters ({@code metrics.perUser}): messages by user and outcome, and quota refusals by user.
 * A {@code user} label is unbounded by nature, so at most {@code max} users get one, the first seen since start; every
 * later user is counted under {@link #OTHER}. Mail without a user (a relay network's) is not counted here: the
 * node-wide counters have it, and a label of its own would say nothing more.
 *
 * <p>Called from every SMTP and HTTP event loop at once. A user already labelled costs one ConcurrentHashMap lookup;
 * once the cap is reached an unseen user costs that lookup and one volatile read, and is not stored (a stream of new
 * names must not grow the map either). The cap is a reservation on an AtomicInteger taken inside computeIfAbsent, which
 * runs once per user name: however the event loops race, exactly {@code min(max, users seen)} labels exist.
 */
final class PerUserMeters {
  /**
   * The label of the users beyond the cap. User names (auth.usersFile, api.keysFile) cannot hold {@code #}, so no user's
   * own label can be this.
   */
  static final String OTHER = "#other";

  private final MeterRegistry registry;
  private final int max;
  private final AtomicInteger reserved = new AtomicInteger();
  private final Map<String, UserMeters> users = new ConcurrentHashMap<>();
  private final UserMeters other;

  PerUserMeters(MeterRegistry registry, int max) {
    if (max < 1) {
      throw new IllegalArgumentException("metrics.perUserMax must be at least 1: " + max);
    }
    this.registry = registry;
    this.max = max;
    this.other = new UserMeters(OTHER);
  }

  /** A message of {@code user} ended with {@code outcome}; nothing for mail without a user. */
  void message(String user, Outcome outcome) {
    if (user != null) {
      of(user).messages.get(outcome).increment();
    }
  }

  /** {@code user} was refused for a used-up hourly or daily quota. */
  void quotaRefusal(String user) {
    if (user != null) {
      of(user).quotaRefusals.increment();
    }
  }

  /** Users with a label of their own (for tests and the cap's check). */
  int labelled() {
    return users.size();
  }

  private UserMeters of(String user) {
    UserMeters m = users.get(user);
    if (m != null) {
      return m;
    }
    if (reserved.get() >= max) {
      return other;
    }
    // Once per name (computeIfAbsent's function runs at most once per absent key); a loser of the reservation maps to
    // nothing, so later users are never stored.
    m = users.computeIfAbsent(user, u -> reserved.getAndIncrement() < max ? new UserMeters(u) : null);
    return m != null ? m : other;
  }

  /**
   * One label's series, registered when the label is given: every outcome from the start at zero, as the node-wide
   * counters do, so a rate over a user's series has no gap when an outcome first happens.
   */
  private final class UserMeters {
    final Map<Outcome, Counter> messages = new EnumMap<>(Outcome.class);
    final Counter quotaRefusals;

    UserMeters(String label) {
      for (Outcome o : Outcome.values()) {
        messages.put(o, Counter.builder("ledgerpost.user.messages")
            .description("Messages per user (metrics.perUser) by what happened after DATA, as ledgerpost_delivery_outcomes_total")
            .tag("user", label).tag("outcome", o.name().toLowerCase(Locale.ROOT)).register(registry));
      }
      quotaRefusals = Counter.builder("ledgerpost.user.quota.refusals")
          .description("Refusals for a used-up hourly or daily quota per user (metrics.perUser): at MAIL, at the send API, at the open")
          .tag("user", label).register(registry);
    }
  }
}
