package dev.ledgerpost.operate.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.QuotaCounting;
import dev.ledgerpost.platform.observability.MicrometerGatewayMetrics;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.tenants.Tenants;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The early quota refusals (at MAIL, at the send API: both ask {@link QuotaGate#overQuota}) count as the user's quota
 * refusal under metrics.perUser; an answer within the quota, and mail without a user, count nothing.
 */
class QuotaGateRefusalsTest {

  @Test
  void eachRefusalByTheNodesCopyIsCountedForItsUser() {
    Instant now = Instant.now().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofMinutes(10));
    Tenants tenants = Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of(
        "bob", new TenantPolicy(1, 0, 0, 0, false), "alice", new TenantPolicy(5, 0, 0, 0, false))));
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    QuotaGate gate = new QuotaGate(tenants, Clock.fixed(now, ZoneOffset.UTC), new MicrometerGatewayMetrics(registry, 10));
    Instant hour = QuotaCounting.hourStart(now);
    Instant day = QuotaCounting.dayStart(now);
    gate.replace(Map.of("bob", new QuotaMessages.Usage("bob", hour, 1, 0, day, 1, 0),
        "alice", new QuotaMessages.Usage("alice", hour, 1, 0, day, 1, 0)));

    assertThat(gate.overQuota("bob")).isPresent();
    assertThat(gate.overQuota("bob")).isPresent();
    assertThat(gate.overQuota("alice")).isEmpty();
    assertThat(gate.overQuota(null)).isEmpty();

    assertThat(registry.get("ledgerpost.user.quota.refusals").tag("user", "bob").counter().count()).isEqualTo(2.0);
    assertThat(registry.find("ledgerpost.user.quota.refusals").tag("user", "alice").counters()).isEmpty();
  }
}
