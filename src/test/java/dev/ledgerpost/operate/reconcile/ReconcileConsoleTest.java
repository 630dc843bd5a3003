package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.HeadlessChrome;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console's part of reconciliation (docs/design.md §8.4), in headless chromium: the message page shows the open
 * proposal with the smarthost's log lines; accepting it (with the confirmation step) resolves the message, and the
 * resolution shows the evidence; rejecting another keeps its message as it is.
 */
class ReconcileConsoleTest {
  static final Duration WAIT = Duration.ofSeconds(15);
  static final MaillogWriter maillog = MaillogWriter.fresh("maillog-console-");
  static HeadlessChrome chrome;
  static WebDriver driver;
  static String base;
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("reconcile.interval", "200ms")
      .with("reconcile.sources", maillog.asSource("mx"));

  @BeforeAll
  static void start() {
    base = "http://127.0.0.1:" + gateway.httpPort();
    chrome = HeadlessChrome.start(1280, 900);
    driver = chrome.driver();
  }

  @AfterAll
  static void stop() {
    if (chrome != null) {
      chrome.close();
    }
  }

  private static UUID unknownWithProposal(String messageId, String queueId) throws Exception {
    UUID id = maillog.unknownSeenQueued(gateway.databaseUrl(), messageId, queueId);
    Poll.until(WAIT, "a proposal for " + id, () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM reconcile_proposals WHERE message_id = '" + id + "'") == 1);
    return id;
  }

  @Test
  void anOperatorAcceptsOneProposalAndRejectsAnotherFromTheMessagePage() throws Exception {
    UUID accepted = unknownWithProposal("<console-1@example.com>", "EEE1111111");
    UUID rejected = unknownWithProposal("<console-2@example.com>", "EEE2222222");

    driver.get(base + "/console/");
    waitFor(By.id("token")).sendKeys(gateway.gateway().adminToken());
    driver.findElement(By.id("operator")).sendKeys("Olga Operator" + Keys.ENTER);
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("nav")));

    driver.get(base + "/console/#/message/" + accepted);
    // The page reads the message again on its events: look elements up afresh rather than keep them.
    By open = By.cssSelector("#proposals .proposal[data-state='OPEN']");
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(open));
    wait(WAIT).until(d -> d.findElement(By.id("timeline")).getText().contains("Reconcile proposed: delivered (exact)"));
    assertThat(driver.findElement(open).getText()).contains("delivered (exact)", "From mx, evidence EEE1111111",
        "queued as EEE1111111");
    assertThat(driver.findElement(open).findElement(By.cssSelector(".evidence-lines")).getText())
        .contains("EEE1111111: message-id=<console-1@example.com>", "EEE1111111: from=<a@example.com>");

    driver.findElement(open).findElement(By.cssSelector(".proposal-accept")).click();
    WebElement dialog = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("proposal-dialog")));
    assertThat(dialog.getText()).contains("resolve this message as delivered");
    assertThat(driver.switchTo().activeElement().getAttribute("id")).as("the safe choice has the focus").isEqualTo("proposal-cancel");
    assertThat(driver.findElement(By.id("proposal-operator")).getAttribute("value")).isEqualTo("Olga Operator");
    driver.findElement(By.id("proposal-note")).sendKeys("matches the relay's log");
    driver.findElement(By.id("proposal-confirm")).click();
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("proposal-done")));
    assertThat(driver.findElement(By.id("proposal-done")).getText()).contains("accepted", "Resolved: delivered", "Olga Operator");
    wait(WAIT).until(d -> "RESOLVED_DELIVERED".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    // Read in one go, found afresh: the timeline is drawn again on each event, and a kept element goes stale.
    String[] resolved = new String[1];
    wait(WAIT).until(d -> (resolved[0] = d.findElement(By.cssSelector(".event-resolved")).getText()) != null);
    assertThat(resolved[0]).contains("Resolved as delivered by Olga Operator", "reconcile proposal",
        "matches the relay's log", "EEE1111111: message-id=<console-1@example.com>");
    assertThat(LedgerRows.status(gateway.databaseUrl(), accepted)).isEqualTo("RESOLVED_DELIVERED");

    driver.get(base + "/console/#/message/" + rejected);
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(open));
    driver.findElement(open).findElement(By.cssSelector(".proposal-reject")).click();
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("proposal-dialog")));
    driver.findElement(By.id("proposal-confirm")).click();
    wait(WAIT).until(d -> d.findElement(By.cssSelector("#proposals .proposal")).getAttribute("data-state").equals("REJECTED"));
    assertThat(driver.findElement(By.cssSelector("#proposals .proposal")).getText()).contains("Rejected by Olga Operator");
    assertThat(driver.findElements(By.cssSelector(".proposal-accept"))).isEmpty();
    assertThat(LedgerRows.status(gateway.databaseUrl(), rejected)).isEqualTo("UNKNOWN");

    assertThat(chrome.pageProblems()).isEmpty();
  }

  static WebElement waitFor(By by) {
    return chrome.awaitPresent(by, WAIT);
  }

  static WebDriverWait wait(Duration d) {
    return chrome.await(d);
  }
}
