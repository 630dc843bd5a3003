package dev.ledgerpost.platform.config;

import dev.ledgerpost.platform.auth.WebhookSecrets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** webhooks.* as an operator writes them: YAML, a JSON variable, and every mistake named at once. */
class WebhookKeysTest {
  static final String SECRET = "whsec_" + Base64.getEncoder().encodeToString(new byte[32]);

  static GatewayConfig load(Map<String, Object> file, Map<String, String> env, Path base) {
    return ConfigLoader.fromSources(file, env, Map.of(), base);
  }

  @Test
  void defaultsAreTheSpecificationsExampleSchedule() {
    GatewayConfig.Webhooks w = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of()).webhooks();
    assertThat(w.endpoints()).isEmpty();
    assertThat(w.retrySchedule()).containsExactly(Duration.ZERO, Duration.ofSeconds(5), Duration.ofMinutes(5),
        Duration.ofMinutes(30), Duration.ofHours(2), Duration.ofHours(5), Duration.ofHours(10), Duration.ofHours(14),
        Duration.ofHours(20), Duration.ofHours(24));
    assertThat(w.timeout()).isEqualTo(Duration.ofSeconds(15));
    assertThat(w.concurrency()).isEqualTo(4);
  }

  @Test
  void endpointsFromYamlWithASecretFileResolvedAgainstTheConfigurationsDirectory(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("app.secret"), "# rotated 2026-11\n" + SECRET + "\n");
    GatewayConfig c = load(Map.of("webhooks", Map.of(
        "endpoints", List.of(
            Map.of("name", "app", "url", "https://app.example.com/hooks", "secretFile", "app.secret",
                "events", List.of("message.settled", "message.stale"), "user", "shop"),
            Map.of("name", "audit", "url", "http://127.0.0.1:9000/h", "secret", List.of(SECRET, SECRET))),
        "retrySchedule", List.of("0s", "10s", "1m"))), Map.of(), dir);
    GatewayConfig.WebhookEndpoint app = c.webhooks().endpoints().get(0);
    assertThat(app.secretFile()).isEqualTo(dir.resolve("app.secret").toString());
    assertThat(app.events()).containsExactly("message.settled", "message.stale");
    assertThat(app.user()).isEqualTo("shop");
    assertThat(WebhookSecrets.read("app", Path.of(app.secretFile()))).hasSize(1);
    GatewayConfig.WebhookEndpoint audit = c.webhooks().endpoints().get(1);
    assertThat(audit.events()).as("every event: none named").isEqualTo(GatewayConfig.WEBHOOK_EVENTS);
    assertThat(audit.secrets()).hasSize(2);
    assertThat(audit.toString()).doesNotContain(SECRET.substring(6));
    assertThat(c.webhooks().retrySchedule()).containsExactly(Duration.ZERO, Duration.ofSeconds(10), Duration.ofMinutes(1));
  }

  @Test
  void endpointsFromTheEnvironmentAreAJsonArray() {
    GatewayConfig c = load(Map.of(), Map.of("LEDGERPOST_WEBHOOKS_ENDPOINTS",
        "[{\"name\":\"app\",\"url\":\"https://app.example.com/h\",\"secret\":\"" + SECRET + "\"}]",
        "LEDGERPOST_WEBHOOKS_RETRYSCHEDULE", "0s, 1s"), Path.of(""));
    assertThat(c.webhooks().endpoints()).hasSize(1);
    assertThat(c.webhooks().retrySchedule()).hasSize(2);
  }

  @Test
  void everyMistakeOfEveryEndpointIsNamed() {
    assertThatThrownBy(() -> load(Map.of("webhooks", Map.of("endpoints", List.of(
            Map.of("name", "app", "url", "ftp://x/h", "secret", "whsec_c2hvcnQ="),
            Map.of("name", "app", "url", "https://u:p@x/h", "secret", SECRET, "secretFile", "f"),
            Map.of("name", "b", "url", "https://x/h", "secret", SECRET, "events", List.of("message.sent"), "retries", 3),
            Map.of("name", "ep_1", "url", "https://x/h", "secret", SECRET),
            Map.of("name", "endpoints", "url", "https://x/h", "secret", SECRET)),
        "retrySchedule", "0s, soon")), Map.of(), Path.of("")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("endpoint app: url 'ftp://x/h' must be http:// or https://")
        .hasMessageContaining("endpoint app: secret: the key is")
        .hasMessageContaining("endpoint app: the name is used twice")
        .hasMessageContaining("endpoint app: url must not carry credentials")
        .hasMessageContaining("endpoint app: give secret or secretFile (one of them)")
        .hasMessageContaining("endpoint b: events: 'message.sent' is not one of")
        .hasMessageContaining("endpoint b: retries: unknown key")
        .hasMessageContaining("endpoint 3: name 'ep_1' is taken by the API")
        .hasMessageContaining("endpoint 4: name 'endpoints' is taken by the API")
        .hasMessageContaining("webhooks.retrySchedule: 'soon' is not a duration");
  }

  @Test
  void aSecretFileThatCannotBeReadOrHoldsABadLineIsRefused(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> load(Map.of("webhooks", Map.of("endpoints", List.of(
        Map.of("name", "app", "url", "https://x/h", "secretFile", "missing.secret")))), Map.of(), dir))
        .hasMessageContaining("endpoint app: cannot read secretFile " + dir.resolve("missing.secret"));
    Path bad = dir.resolve("bad.secret");
    Files.writeString(bad, SECRET + "\nsecret\n");
    assertThatThrownBy(() -> WebhookSecrets.read("webhooks.endpoints app secretFile", bad))
        .isInstanceOf(ConfigException.class).hasMessageContaining(bad + " line 2: expected whsec_");
  }
}
