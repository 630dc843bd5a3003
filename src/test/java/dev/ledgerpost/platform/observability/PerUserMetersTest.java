package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.observability.GatewayMetrics.Outcome;
import dev.ledgerpost.testing.Race;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The per-user counters' cap (metrics.perUser): exactly N labels however the event loops race, the rest under #other. */
class PerUserMetersTest {

  @Test
  void manyThreadsRacingOverFiftyUsersMakeExactlyTheCapsLabelsAndLoseNoCount() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PerUserMeters meters = new PerUserMeters(registry, 5);
    AtomicInteger next = new AtomicInteger();
    int threads = 8;
    int rounds = 2_000;
    // Consecutive increments go to different users, so the first ones race for the five reservations.
    Race.run(threads, rounds, () -> meters.message("u" + (next.getAndIncrement() % 50), Outcome.ACCEPTED));

    assertThat(next.get()).isEqualTo(threads * rounds);
    assertThat(meters.labelled()).isEqualTo(5);
    Set<String> labels = new TreeSet<>();
    double total = 0;
    for (Counter c : registry.find("ledgerpost.user.messages").tag("outcome", "accepted").counters()) {
      labels.add(c.getId().getTag("user"));
      total += c.count();
    }
    assertThat(labels).hasSize(6).contains(PerUserMeters.OTHER);
    assertThat(total).as("every increment counted once").isEqualTo(threads * rounds);
    double other = registry.get("ledgerpost.user.messages").tags("user", PerUserMeters.OTHER, "outcome", "accepted")
        .counter().count();
    assertThat(other).as("45 of the 50 users are beyond the cap").isGreaterThan(0).isLessThan(threads * rounds);
  }

  @Test
  void theFirstUsersSeenGetTheLabelsAndMailWithoutAUserIsNotCounted() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PerUserMeters meters = new PerUserMeters(registry, 2);
    meters.message("alice", Outcome.ACCEPTED);
    meters.quotaRefusal("bob");
    meters.message("carol", Outcome.DEFERRED);
    meters.quotaRefusal("carol");
    meters.message("bob", Outcome.OVER_QUOTA);
    meters.message(null, Outcome.ACCEPTED);
    meters.quotaRefusal(null);

    assertThat(count(registry, "alice", "accepted")).isEqualTo(1.0);
    assertThat(count(registry, "bob", "over_quota")).isEqualTo(1.0);
    assertThat(count(registry, PerUserMeters.OTHER, "deferred")).isEqualTo(1.0);
    assertThat(registry.get("ledgerpost.user.quota.refusals").tag("user", "bob").counter().count()).isEqualTo(1.0);
    assertThat(registry.get("ledgerpost.user.quota.refusals").tag("user", PerUserMeters.OTHER).counter().count())
        .isEqualTo(1.0);
    assertThat(registry.find("ledgerpost.user.messages").tag("user", "carol").counters()).isEmpty();
    double everyMessage = registry.find("ledgerpost.user.messages").counters().stream().mapToDouble(Counter::count).sum();
    assertThat(everyMessage).as("the message without a user is nowhere").isEqualTo(3.0);
  }

  @Test
  void offRegistersNoPerUserMeterAndIgnoresUserEvents() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerGatewayMetrics metrics = new MicrometerGatewayMetrics(registry);
    metrics.userMessage("alice", Outcome.ACCEPTED);
    metrics.userQuotaRefusal("alice");
    assertThat(registry.getMeters()).isNotEmpty()
        .noneMatch(m -> m.getId().getName().startsWith("ledgerpost.user."))
        .noneMatch(m -> m.getId().getTag("user") != null);

    SimpleMeterRegistry on = new SimpleMeterRegistry();
    MicrometerGatewayMetrics perUser = new MicrometerGatewayMetrics(on, 3);
    perUser.userMessage("alice", Outcome.ACCEPTED);
    assertThat(count(on, "alice", "accepted")).isEqualTo(1.0);
  }

  private static double count(SimpleMeterRegistry registry, String user, String outcome) {
    return registry.get("ledgerpost.user.messages").tags("user", user, "outcome", outcome).counter().count();
  }
}
