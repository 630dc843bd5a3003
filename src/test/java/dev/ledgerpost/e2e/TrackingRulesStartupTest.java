package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A bad bounce rules file (tracking.rulesFile, docs/design.md §8.13) stops a real gateway process at start: one plain
 * line naming the file and the line, no stack trace, exit status 2, as every configuration error (§11.1).
 */
class TrackingRulesStartupTest {
  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();

  @Test
  void aBadRuleIsOneLineNamingItsLineNumberWithExitStatus2() throws Exception {
    Path dir = GatewayHarness.tempDir("bad-rules-");
    Files.writeString(dir.resolve("rules.conf"), "# ours\nmailbox-gone invalid_recipient 5.2.2\nwho-knows nonsense -\n");
    String config = String.join("\n", "smtp:", "  port: 0", "  hostname: child.test", "http:", "  port: 0",
        "downstream:", "  host: 127.0.0.1", "  port: " + harness.downstream().port(), "  starttls: none",
        "ledger:", "  url: \"" + TestDatabase.newDatabase() + "\"", "  dataDir: \"" + dir.resolve("pg") + "\"",
        "api:", "  adminToken: child-admin-token-0123456789", "tracking:", "  rulesFile: rules.conf", "");
    try (ChildGateway child = ChildGateway.start(dir, config, null)) {
      assertThat(child.awaitExit(Duration.ofSeconds(120))).as(String.join("\n", child.lines())).isEqualTo(2);
      assertThat(child.log("tracking.rulesFile " + dir.resolve("rules.conf") + " line 3: unknown category 'nonsense'")).hasSize(1);
      assertThat(child.lines()).noneMatch(l -> l.matches("\\s+at [\\w.$]+\\(.*") || l.startsWith("Caused by:"));
    }
  }
}
