package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.GatewayConfig.Smarthost;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** downstream.fallback and the smarthosts' back-off: defaults, a YAML list, a variable, bad values. */
class SmarthostKeysTest {

  private static GatewayConfig with(Map<String, Object> overrides) {
    return ConfigLoader.fromSources(Map.of(), Map.of(), overrides);
  }

  @Test
  void byDefaultThereIsOneSmarthost() {
    GatewayConfig.Downstream d = with(Map.of()).downstream();
    assertThat(d.fallback()).isEmpty();
    assertThat(d.hosts()).containsExactly(new Smarthost("127.0.0.1", 25));
    assertThat(d.hostBackoff()).isEqualTo(Duration.ofSeconds(30));
    assertThat(d.hostMaxBackoff()).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void aYamlListComesAfterThePrimaryInOrderAndEachHasItsRoute() {
    GatewayConfig.Downstream d = with(Map.of("downstream.host", "mx1.example.net", "downstream.port", 587,
        "downstream.fallback", List.of("mx2.example.net:25", "[2001:db8::1]:2525"))).downstream();
    assertThat(d.hosts()).containsExactly(new Smarthost("mx1.example.net", 587), new Smarthost("mx2.example.net", 25),
        new Smarthost("2001:db8::1", 2525));
    assertThat(d.hosts()).extracting(Smarthost::route).containsExactly("smarthost:mx1.example.net:587",
        "smarthost:mx2.example.net:25", "smarthost:2001:db8::1:2525");
    assertThat(d.hosts().get(2)).hasToString("[2001:db8::1]:2525");
  }

  @Test
  void aVariableIsSplitAtCommasAndSpaces() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of("LEDGERPOST_DOWNSTREAM_FALLBACK", "10.0.0.2:25, 10.0.0.3:26"),
        Map.of());
    assertThat(c.downstream().fallback()).containsExactly(new Smarthost("10.0.0.2", 25), new Smarthost("10.0.0.3", 26));
  }

  @Test
  void badEntriesAreNamedTogether() {
    assertThatThrownBy(() -> with(Map.of("downstream.fallback", List.of("mx2.example.net", "mx3:0", "2001:db8::1:25", "mx4:x"))))
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactly(
            "downstream.fallback: 'mx2.example.net' is not host:port (an IPv6 address as [addr]:port); "
                + "'mx3:0' is not host:port (an IPv6 address as [addr]:port); "
                + "'2001:db8::1:25' is not host:port (an IPv6 address as [addr]:port); "
                + "'mx4:x' is not host:port (an IPv6 address as [addr]:port)"));
  }

  @Test
  void aSmarthostNamedTwiceAndACeilingBelowTheBackoffAreRefused() {
    assertThatThrownBy(() -> with(Map.of("downstream.host", "127.0.0.1", "downstream.port", 2526,
        "downstream.fallback", "127.0.0.1:2527 127.0.0.1:2526", "downstream.hostBackoff", "1m", "downstream.hostMaxBackoff", "30s")))
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactlyInAnyOrder(
            "downstream.fallback: 127.0.0.1:2526 is named twice (downstream.host:port is the first smarthost)",
            "downstream.hostMaxBackoff: 30s is shorter than downstream.hostBackoff (60s)"));
  }
}
