package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.TestDatabase;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What an operator reads when the gateway starts, or does not (docs/design.md §11.1), from a real process: the
 * reason in one line without a stack trace, exit status 2 for the configuration and 1 for the rest; which
 * configuration was read; no noise on a normal start, and a word when SIGHUP cannot reload.
 */
class StartupMessagesTest {
  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();

  private static String config(Path dir, String smtpPort, String ledgerUrl, String... more) {
    return String.join("\n", "smtp:", "  port: " + smtpPort, "  hostname: child.test",
        "http:", "  port: 0",
        "downstream:", "  host: 127.0.0.1", "  port: " + harness.downstream().port(), "  starttls: none",
        "ledger:", "  url: \"" + ledgerUrl + "\"", "  dataDir: \"" + dir.resolve("pg") + "\"", "  lockTimeout: 250ms",
        "api:", "  adminToken: child-admin-token-0123456789", String.join("\n", more), "");
  }

  /** No line of a Java stack trace: "\tat dev.ledgerpost..." or "Caused by:". */
  private static void noStackTrace(ChildGateway child) {
    assertThat(child.lines()).noneMatch(l -> l.matches("\\s+at [\\w.$]+\\(.*") || l.startsWith("Caused by:"));
  }

  @Test
  void aPortInUseIsOneLineNamingThePortAndItsKeyWithExitStatus1() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      int port = taken.getLocalPort();
      Path dir = GatewayHarness.tempDir("port-in-use-");
      try (ChildGateway child = ChildGateway.start(dir, config(dir, String.valueOf(port), TestDatabase.newDatabase()), null)) {
        assertThat(child.awaitExit(Duration.ofSeconds(120))).as(String.join("\n", child.lines())).isEqualTo(1);
        assertThat(child.log("smtp.port " + port + ": 127.0.0.1:" + port + " is already in use by another program; stop it or set "
            + "smtp.port to a free port")).hasSize(1);
        noStackTrace(child);
      }
      try (ChildGateway verbose = ChildGateway.run(dir, Map.of(), "--config", dir.resolve("gateway.yaml").toString(), "--verbose")) {
        assertThat(verbose.awaitExit(Duration.ofSeconds(120))).isEqualTo(1);
        assertThat(verbose.log("is already in use")).isNotEmpty();
        assertThat(verbose.lines()).as("--verbose adds the trace").anyMatch(l -> l.matches("\\s+at [\\w.$]+\\(.*"));
      }
    }
  }

  @Test
  void aBadLineInTheKeysFileIsAConfigurationErrorWithExitStatus2() throws Exception {
    Path dir = GatewayHarness.tempDir("bad-keys-");
    Files.writeString(dir.resolve("api-keys"), "# keys\nalice:not-a-hash\n");
    try (ChildGateway child = ChildGateway.start(dir, config(dir, "0", TestDatabase.newDatabase(), "  keysFile: api-keys"),
        null)) {
      assertThat(child.awaitExit(Duration.ofSeconds(120))).as(String.join("\n", child.lines())).isEqualTo(2);
      assertThat(child.log("api.keysFile " + dir.resolve("api-keys") + " line 2: expected user:sha256-hex-of-key")).hasSize(1);
      noStackTrace(child);
    }
  }

  @Test
  void aStaleThresholdShorterThanADeliveryIsAConfigurationErrorWithExitStatus2() throws Exception {
    // Issue 26, item 5: with the default timeouts a row stays PENDING in delivery for up to 15 minutes.
    Path dir = GatewayHarness.tempDir("short-threshold-");
    try (ChildGateway child = ChildGateway.start(dir, config(dir, "0", TestDatabase.newDatabase(), "stale:", "  threshold: 10m"),
        null)) {
      assertThat(child.awaitExit(Duration.ofSeconds(60))).as(String.join("\n", child.lines())).isEqualTo(2);
      assertThat(child.log("stale.threshold: 600s must be longer than downstream.replyTimeout + downstream.dataTimeout (900s): "
          + "a PENDING row that young may still be in delivery")).hasSize(1);
      assertThat(child.log("must be longer than")).hasSize(1);
      noStackTrace(child);
    }
  }

  @Test
  void withoutAConfigFileTheLogSaysSoAndAMisspeltVariableIsAnErrorNamingIt() throws Exception {
    Path dir = GatewayHarness.tempDir("no-config-");
    try (ChildGateway child = ChildGateway.run(dir, Map.of("LEDGERPOST_SMTP_IDLE_TIMEOUT", "1m", "LEDGERPOST_SMTP_PORT", "0",
        "LEDGERPOST_HTTP_PORT", "0"))) {
      assertThat(child.awaitExit(Duration.ofSeconds(60))).as(String.join("\n", child.lines())).isEqualTo(2);
      assertThat(child.log("no configuration file (conf/gateway.yaml does not exist in " + dir + ")",
          "relative paths (data/pg, data/admin-token) resolve against " + dir)).hasSize(1);
      assertThat(child.log("LEDGERPOST_SMTP_IDLE_TIMEOUT: unknown environment variable (did you mean "
          + "LEDGERPOST_SMTP_IDLETIMEOUT?)")).hasSize(1);
      noStackTrace(child);
    }
  }

  @Test
  void anEmbeddedPostgresqlThatDoesNotStartShowsTheLastLinesOfItsLog() throws Exception {
    Path dir = GatewayHarness.tempDir("pg-fails-");
    Path pg = Files.createDirectories(dir.resolve("pg"));
    // A directory that looks configured but holds no cluster: pg_ctl refuses it, and says why in its log.
    Files.writeString(pg.resolve("postgresql.conf"), "# not a cluster\n");
    try (ChildGateway child = ChildGateway.start(dir, config(dir, "0", ""), null)) {
      assertThat(child.awaitExit(Duration.ofSeconds(120))).as(String.join("\n", child.lines())).isEqualTo(1);
      assertThat(child.log("the embedded PostgreSQL did not start on ledger.dataDir " + pg, "the last lines of its log "
          + dir.resolve("postgresql.log"))).hasSize(1);
      assertThat(child.log("is not a database cluster directory")).isNotEmpty();
      noStackTrace(child);
    }
  }

  @Test
  void aNormalStartSaysWhichConfigurationItReadAndNothingElseWorries() throws Exception {
    Path dir = GatewayHarness.tempDir("quiet-start-");
    String ledger = TestDatabase.newEmptyDatabase();
    for (int start = 1; start <= 2; start++) {
      // The second start as under nohup: SIGHUP ignored, which the JVM then never hooks, so the reload cannot work.
      boolean hupIgnored = start == 2;
      try (ChildGateway child = ChildGateway.start(dir, config(dir, "0", ledger), hupIgnored ? "trap '' HUP" : null)
          .awaitReady(Duration.ofSeconds(120))) {
        assertThat(child.log("configuration from " + dir.resolve("gateway.yaml") + "; relative paths resolve against " + dir))
            .hasSize(1);
        String schema = start == 1 ? ".*ledger schema at version \\d+ \\(\\d+ migration\\(s\\) applied\\)$"
            : ".*ledger schema at version \\d+, up to date$";
        assertThat(child.lines()).as("the schema line of start " + start).filteredOn(l -> l.matches(schema)).hasSize(1);
        assertThat(child.log("version null")).isEmpty();
        List<String> warnings = child.lines().stream().filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")).toList();
        assertThat(warnings).as("warnings on a normal start")
            .allMatch(l -> l.contains("self-signed certificate") || hupIgnored && l.contains("SIGHUP is ignored"));
        assertThat(child.log("SIGHUP is ignored in this process (started under nohup?): credentials are read at start only"))
            .hasSize(hupIgnored ? 1 : 0);
      }
    }
  }
}
