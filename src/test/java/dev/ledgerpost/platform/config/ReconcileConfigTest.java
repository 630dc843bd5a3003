package dev.ledgerpost.platform.config;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reconcile.* keys (docs/design.md §8.4): defaults, a YAML list of sources, a JSON array in a variable, and refusals. */
class ReconcileConfigTest {

  @Test
  void byDefaultThereAreNoSourcesAndNothingIsResolvedAutomatically() {
    GatewayConfig.Reconcile r = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of()).reconcile();
    assertThat(r.sources()).isEmpty();
    assertThat(r.autoResolve()).isEqualTo(GatewayConfig.AutoResolve.NEVER);
    assertThat(r.interval()).isEqualTo(Duration.ofMinutes(1));
    assertThat(r.window()).isEqualTo(Duration.ofMinutes(15));
    assertThat(r.pendingAge()).isEqualTo(Duration.ofMinutes(30));
  }

  @Test
  void aYamlListOfSourcesIsReadWithItsRelativePathsBesideTheFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gateway.yaml");
    Files.writeString(file, """
        reconcile:
          autoResolve: exact
          interval: 30s
          sources:
            - {type: postfix-log, path: logs/mail.log, zone: Europe/Berlin}
            - type: ledgerpost
              url: https://next-hop.example.net:8443/
              token: secret-token
            - {type: postfix-log, path: /var/log/mail.log}
        """);
    Vertx vertx = Vertx.vertx();
    GatewayConfig c;
    try {
      c = ConfigLoader.load(vertx, file, Map.of()).toCompletionStage().toCompletableFuture().get(10, SECONDS);
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, SECONDS);
    }
    List<GatewayConfig.ReconcileSource> s = c.reconcile().sources();
    assertThat(c.reconcile().autoResolve()).isEqualTo(GatewayConfig.AutoResolve.EXACT);
    assertThat(c.reconcile().interval()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s).hasSize(3);
    assertThat(s.get(0).name()).isEqualTo("postfix-log");
    assertThat(s.get(0).path()).isEqualTo(dir.resolve("logs/mail.log").toString());
    assertThat(s.get(0).zone()).isEqualTo(ZoneId.of("Europe/Berlin"));
    assertThat(s.get(1).name()).isEqualTo("ledgerpost");
    assertThat(s.get(1).type()).isEqualTo(GatewayConfig.SourceType.LEDGERPOST);
    assertThat(s.get(1).url()).as("without its trailing slash").isEqualTo("https://next-hop.example.net:8443");
    assertThat(s.get(1).token()).isEqualTo("secret-token");
    assertThat(s.get(2).name()).as("a second source of one type is numbered").isEqualTo("postfix-log-2");
    assertThat(s.get(2).zone()).isEqualTo(ZoneId.systemDefault());
  }

  @Test
  void aVariableHoldsTheSourcesAsAJsonArray() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of("LEDGERPOST_RECONCILE_SOURCES",
        "[{\"type\": \"postfix-log\", \"name\": \"relay\", \"path\": \"/var/log/mail.log\"}]"), Map.of());
    assertThat(c.reconcile().sources()).singleElement().satisfies(s -> {
      assertThat(s.name()).isEqualTo("relay");
      assertThat(s.path()).isEqualTo("/var/log/mail.log");
    });
  }

  @Test
  void everyBadSourceAndABadPendingAgeAreNamedInOneError() {
    List<Map<String, Object>> sources = List.of(
        Map.of("type", "sendmail-log", "path", "/x"),
        Map.of("type", "postfix-log"),
        Map.of("type", "postfix-log", "path", "/x", "file", "/y"),
        Map.of("type", "postfix-log", "path", "/x", "zone", "Mars/Olympus"),
        Map.of("type", "ledgerpost", "url", "ftp://next-hop", "token", "t"),
        Map.of("type", "ledgerpost", "url", "http://next-hop:8080"),
        Map.of("type", "postfix-log", "name", "twice", "path", "/a"),
        Map.of("type", "postfix-log", "name", "twice", "path", "/b"));
    ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class, () -> ConfigLoader.fromSources(
        Map.of("reconcile", Map.of("sources", sources, "pendingAge", "5m"), "downstream", Map.of("dataTimeout", "10m")),
        Map.of(), Map.of()));
    String all = String.join("\n", e.problems());
    assertThat(all).contains(
        "source 1: type must be postfix-log or ledgerpost, not 'sendmail-log'",
        "source 2: a postfix-log source needs a path",
        "source 3: unknown member 'file' of a postfix-log source",
        "source 4: zone 'Mars/Olympus' is not a time zone",
        "source 5: a ledgerpost source needs the url of its HTTP API",
        "source 6: a ledgerpost source needs a token",
        "source 8: name 'twice' is given to two sources",
        "reconcile.pendingAge: 300s must be longer than downstream.replyTimeout + downstream.dataTimeout (900s)");
    ConfigException notJson = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class, () -> ConfigLoader.fromSources(
        Map.of(), Map.of("LEDGERPOST_RECONCILE_SOURCES", "{not json"), Map.of()));
    assertThat(notJson.problems()).singleElement().asString().startsWith("reconcile.sources: expected a JSON array of sources");
  }
}
