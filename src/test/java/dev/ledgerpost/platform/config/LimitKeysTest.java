package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The keys of the AUTH throttle, the client limits and the sender policy: defaults, zeros, bad values. */
class LimitKeysTest {

  private static GatewayConfig with(Map<String, Object> overrides) {
    return ConfigLoader.fromSources(Map.of(), Map.of(), overrides);
  }

  @Test
  void defaults() {
    GatewayConfig c = with(Map.of());
    assertThat(c.smtp().maxConnectionsPerAddress()).isEqualTo(50);
    assertThat(c.smtp().minDataRate()).isEqualTo(500);
    assertThat(c.smtp().minDataRateGrace()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.downstream().maxConnections()).isEqualTo(200);
    assertThat(c.auth().failureDelay()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.auth().banThreshold()).isEqualTo(10);
    assertThat(c.auth().banWindow()).isEqualTo(Duration.ofMinutes(10));
    assertThat(c.auth().rateLimit()).isZero();
    assertThat(c.auth().senderPolicy()).isEqualTo(GatewayConfig.SenderPolicyMode.ANY);
  }

  @Test
  void zeroTurnsTheDelayTheBanTheRateAndTheDataMinimumOff() {
    GatewayConfig c = with(Map.of("auth.failureDelay", "0", "auth.banThreshold", 0, "auth.rateLimit", 0, "smtp.minDataRate", 0));
    assertThat(c.auth().failureDelay()).isZero();
    assertThat(c.auth().banThreshold()).isZero();
    assertThat(c.smtp().minDataRate()).isZero();
  }

  @Test
  void badValuesAreNamedTogether() {
    assertThatThrownBy(() -> with(Map.of("smtp.maxConnectionsPerAddress", 0, "downstream.maxConnections", -1,
        "auth.banWindow", "0s", "auth.rateLimit", -5, "auth.senderPolicy", "mine")))
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactlyInAnyOrder(
            "smtp.maxConnectionsPerAddress: 0 must be positive",
            "downstream.maxConnections: -1 must be positive",
            "auth.banWindow: '0s' must be longer than zero",
            "auth.rateLimit: -5 must not be negative",
            "auth.senderPolicy: 'mine' is not one of any | own"));
  }

  @Test
  void theOwnPolicyNeedsASendersFile() {
    assertThatThrownBy(() -> with(Map.of("auth.senderPolicy", "own")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("auth.senderPolicy: `own` needs auth.sendersFile");
  }
}
