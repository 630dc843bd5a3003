package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.intake.smtp.Replies;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.testing.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The node's copy of the list on its own: normalisation, scopes, expiry by the clock, the count, the reply. */
class SuppressionsTest {
  static final Instant NOW = Instant.parse("2026-12-04T10:00:00Z");
  final MutableClock clock = new MutableClock(NOW);
  final List<GatewayMetrics.Channel> counted = new ArrayList<>();
  final Suppressions list = new Suppressions(clock, new GatewayMetrics() {
    @Override
    public void suppressed(Channel channel) {
      counted.add(channel);
    }
  });

  static Entry entry(String address, String scope, UUID row, Duration ttl) {
    OffsetDateTime added = OffsetDateTime.ofInstant(NOW, ZoneOffset.UTC);
    return new Entry(UUID.randomUUID(), address, scope, "mailbox closed\r\n550 injected", null, "operator", row, null, "ops",
        added, added.plus(ttl));
  }

  void hold(Entry... entries) {
    java.util.HashMap<String, Entry> map = new java.util.HashMap<>();
    for (Entry e : entries) {
      map.put(Suppressions.key(e.scope(), e.address()), e);
    }
    list.replace(1, Map.copyOf(map));
  }

  @Test
  void theDomainIsMatchedWithoutCaseTheLocalPartAsGiven() {
    assertThat(Suppressions.normalise(" <Gone@Example.ORG> ")).isEqualTo("Gone@example.org");
    hold(entry("Gone@example.org", "global", null, Duration.ofDays(1)));
    assertThat(list.refusal("Gone@EXAMPLE.org", null, GatewayMetrics.Channel.SMTP)).isPresent();
    assertThat(list.refusal("gone@example.org", null, GatewayMetrics.Channel.SMTP)).isEmpty();
    assertThat(counted).containsExactly(GatewayMetrics.Channel.SMTP);
  }

  @Test
  void aUserEntryHoldsForThatUserOnly() {
    hold(entry("a@example.com", Suppressions.scopeOf("carol"), null, Duration.ofDays(1)));
    assertThat(list.refusal("a@example.com", "carol", GatewayMetrics.Channel.HTTP)).isPresent();
    assertThat(list.refusal("a@example.com", "dave", GatewayMetrics.Channel.HTTP)).isEmpty();
    assertThat(list.refusal("a@example.com", null, GatewayMetrics.Channel.SMTP)).isEmpty();
  }

  @Test
  void anEntryPastItsExpiryNoLongerApplies() {
    hold(entry("a@example.com", "global", null, Duration.ofHours(1)));
    assertThat(list.refusal("a@example.com", null, GatewayMetrics.Channel.SMTP)).isPresent();
    clock.advance(Duration.ofHours(1));
    assertThat(list.refusal("a@example.com", null, GatewayMetrics.Channel.SMTP)).isEmpty();
  }

  @Test
  void theReplySaysWhySinceWhenAndWhichRowOnOneLine() {
    UUID row = UUID.fromString("0193a1b2-0000-7000-8000-000000000001");
    String wire = Replies.suppressed("a@example.com", entry("a@example.com", "global", row, Duration.ofDays(1))).toWire();
    assertThat(wire).isEqualTo("550 5.1.1 <a@example.com> suppressed since 2026-12-04: mailbox closed??550 injected (ledger "
        + row + ")\r\n");
    assertThat(Replies.suppressed("a@example.com", entry("a@example.com", "global", null, Duration.ofDays(1))).text())
        .doesNotContain("ledger");
  }

  @Test
  void scopesAreGlobalOrANamedUser() {
    assertThat(Suppressions.validScope("global")).isTrue();
    assertThat(Suppressions.validScope("user:carol")).isTrue();
    assertThat(Suppressions.validScope("user:")).isFalse();
    assertThat(Suppressions.validScope("tenant")).isFalse();
  }
}
