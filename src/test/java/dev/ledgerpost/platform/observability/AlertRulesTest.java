package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ExternalTool;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The shipped alert rules are valid Prometheus rules and do what their unit test says (promtool check rules, promtool
 * test rules), the ledger's disk alert among them. scripts/test.sh installs Debian's prometheus, which ships promtool.
 */
class AlertRulesTest {
  static final Path RULES = Path.of("grafana/prometheus/ledgerpost-rules.yml");

  @Test
  void theRulesPassPromtoolsCheckAndTheirUnitTest() throws Exception {
    assertThat(promtool("check", "rules", RULES.toString())).contains("SUCCESS");
    assertThat(promtool("test", "rules", "grafana/prometheus/ledgerpost-rules.test.yml")).contains("SUCCESS");
  }

  @Test
  void theDiskAlertPredictsTheFreeBytesADayAhead() throws Exception {
    assertThat(Files.readString(RULES)).contains("alert: LedgerpostLedgerDiskFullIn24h")
        .contains("predict_linear(ledgerpost_ledger_disk_free_bytes[6h], 24 * 3600) < 0");
  }

  private static String promtool(String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>(List.of(ExternalTool.PROMTOOL.path()));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("promtool finished").isTrue();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.exitValue()).as(out).isZero();
      return out;
    } finally {
      p.destroyForcibly();
    }
  }
}
