package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** webhooks.endpoints[].tags and smtp.stripControlHeaders as an operator writes them (docs/data-model.md §5.17). */
class WebhookTagKeysTest {
  static final String SECRET = "whsec_" + Base64.getEncoder().encodeToString(new byte[32]);

  static GatewayConfig load(Map<String, Object> file) {
    return ConfigLoader.fromSources(file, Map.of(), Map.of());
  }

  @Test
  void aConfiguredEndpointMayFilterByTagsEachKeptOnce() {
    GatewayConfig c = load(Map.of("webhooks", Map.of("endpoints", List.of(
        Map.of("name", "billing", "url", "https://b.example.com/h", "secret", SECRET, "tags", List.of("billing", "eu/1", "billing")),
        Map.of("name", "all", "url", "https://a.example.com/h", "secret", SECRET)))));
    assertThat(c.webhooks().endpoints().get(0).tags()).containsExactly("billing", "eu/1");
    assertThat(c.webhooks().endpoints().get(0).toString()).contains("tags=[billing, eu/1]");
    assertThat(c.webhooks().endpoints().get(1).tags()).as("no filter: every message").isEmpty();
    assertThat(c.smtp().stripControlHeaders()).as("relayed byte for byte unless asked").isFalse();
    assertThat(load(Map.of("smtp", Map.of("stripControlHeaders", true))).smtp().stripControlHeaders()).isTrue();
  }

  @Test
  void aTagThatNoMessageCouldCarryIsNamedWithItsEndpoint() {
    assertThatThrownBy(() -> load(Map.of("webhooks", Map.of("endpoints", List.of(
        Map.of("name", "bad", "url", "https://b.example.com/h", "secret", SECRET, "tags", List.of("ok", "not ok", "x".repeat(65))))))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("endpoint bad: tags: 'not ok' is not a tag")
        .hasMessageContaining("'" + "x".repeat(65) + "' is not a tag");
  }
}
