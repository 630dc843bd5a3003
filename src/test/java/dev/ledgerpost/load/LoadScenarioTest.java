package dev.ledgerpost.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The load driver's scenarios at a small size, in CI: zero invariant violations, printed. */
class LoadScenarioTest {
  /** One scenario's run, printed, with no invariant violated. */
  private static LoadDriver.Report ran(String scenario, int messages, int concurrency) throws Exception {
    LoadDriver.Report report = LoadDriver.run(scenario, messages, concurrency);
    System.out.println(report);
    assertThat(report.invariants().violations()).isEmpty();
    return report;
  }

  @Test
  void lockContentionScenarioKeepsEveryInvariant() throws Exception {
    LoadDriver.Report report = ran("lock-contention", 300, 20);
    assertThat(report.messages()).isEqualTo(300);
    assertThat(report.extra()).doesNotStartWith("0 chaos locks");
  }

  @Test
  void httpLockContentionScenarioKeepsEveryInvariant() throws Exception {
    LoadDriver.Report report = ran("http-lock-contention", 300, 20);
    assertThat(report.messages()).isEqualTo(300);
  }

  @Test
  void wsWatchersEachSeeEverySettledEvent() throws Exception {
    LoadDriver.Report report = ran("ws-watchers", 100, 10);
    assertThat(report.extra()).startsWith("50 of 50");
  }
}
