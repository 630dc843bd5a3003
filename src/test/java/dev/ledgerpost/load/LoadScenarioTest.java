package dev.ledgerpost.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The load driver's scenarios at a small size, in CI: zero invariant violations, printed. */
class LoadScenarioTest {

  @Test
  void lockContentionScenarioKeepsEveryInvariant() throws Exception {
    LoadDriver.Report report = LoadDriver.run("lock-contention", 300, 20);
    System.out.println(report);
    assertThat(report.invariants().violations()).isEmpty();
    assertThat(report.messages()).isEqualTo(300);
    assertThat(report.extra()).doesNotStartWith("0 chaos locks");
  }

  @Test
  void httpLockContentionScenarioKeepsEveryInvariant() throws Exception {
    LoadDriver.Report report = LoadDriver.run("http-lock-contention", 300, 20);
    System.out.println(report);
    assertThat(report.invariants().violations()).isEmpty();
    assertThat(report.messages()).isEqualTo(300);
  }

  @Test
  void wsWatchersEachSeeEverySettledEvent() throws Exception {
    LoadDriver.Report report = LoadDriver.run("ws-watchers", 100, 10);
    System.out.println(report);
    assertThat(report.invariants().violations()).isEmpty();
    assertThat(report.extra()).startsWith("50 of 50");
  }
}
