package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.ShippedFile;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The YAML file as an operator writes it, read through vertx-config. */
class ConfigFileTest {
  @TempDir
  Path dir;

  final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private GatewayConfig load(String yaml, Map<String, String> env) throws Exception {
    Path file = dir.resolve("gateway.yaml");
    Files.writeString(file, yaml);
    try {
      return ConfigLoader.load(vertx, file, env).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  @Test
  void duplicatedLockTimeoutIsAnErrorNotLastOneWins() {
    assertThatThrownBy(() -> load("ledger:\n  lockTimeout: 250ms\n  lockTimeout: 5s\n", Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("lockTimeout")
        .hasMessageContaining("twice");
  }

  @Test
  void shippedConfigurationIsValid() throws Exception {
    Path shipped = ShippedFile.copy("conf/gateway.yaml", dir);
    GatewayConfig c = ConfigLoader.load(vertx, shipped, Map.of()).toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
    assertThat(c.smtp().port()).isEqualTo(2525);
    assertThat(c.ledger().embedded()).isTrue();
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(1000));
    assertThat(c.ledger().dataDir()).as("../data/pg from conf/: the README's data/ next to conf/")
        .isEqualTo(dir.resolve("data/pg").toAbsolutePath().toString());
  }

  @Test
  void theShippedConfigurationsCommentedKeysFileWorksOnceUncommented() throws Exception {
    String shipped = ShippedFile.read("conf/gateway.yaml");
    assertThat(shipped).contains("  # keysFile: api-keys");
    Files.writeString(dir.resolve("api-keys"), "");
    GatewayConfig c = load(shipped.replace("  # keysFile: api-keys", "  keysFile: api-keys"), Map.of());
    assertThat(c.api().keysFile()).isEqualTo(dir.resolve("api-keys").toString());
  }

  @Test
  void environmentOverridesTheFileAndBadValuesAreListedTogether() throws Exception {
    GatewayConfig c = load("smtp:\n  port: 2600\nledger:\n  lockTimeout: 300ms\n", Map.of("LEDGERPOST_SMTP_PORT", "2700"));
    assertThat(c.smtp().port()).isEqualTo(2700);
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(300));
    assertThatThrownBy(() -> load("smtp:\n  port: 99999\n  bogus: 1\nledger:\n  lockTimeout: soon\n", Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .anyMatch(p -> p.startsWith("smtp.port"))
            .anyMatch(p -> p.startsWith("smtp.bogus"))
            .anyMatch(p -> p.startsWith("ledger.lockTimeout")));
  }

  @Test
  void missingFileIsAClearError() {
    assertThatThrownBy(() -> ConfigLoader.load(vertx, dir.resolve("nope.yaml"), Map.of())
            .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(ConfigException.class)
        .hasMessageContaining("does not exist");
  }
}
