package dev.ledgerpost.relay.capture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.HeadlessChrome;
import dev.ledgerpost.testing.SmtpTestClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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

/**
 * A captured message on the console's message page, in a real browser (Debian's chromium, headless): its headers,
 * text and attachments as text, its HTML part rendered inside a sandboxed frame where a script does not run and a
 * remote image is not fetched (docs/design.md §8.10).
 */
class CaptureConsoleTest {
  static final Duration WAIT = Duration.ofSeconds(10);
  static HeadlessChrome chrome;
  static WebDriver driver;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("auth.usersFile", Credentials.htpasswd(Map.of("tester", CaptureTest.PASSWORD)).toString())
      .with("smtp.allowInsecureAuth", true)
      .with("tenants.file", Credentials.write("tenants-", "tenants.yaml", "users:\n  tester:\n    capture: true\n").toString());

  @BeforeAll
  static void start() {
    chrome = HeadlessChrome.start(1280, 900);
    driver = chrome.driver();
  }

  @AfterAll
  static void stop() {
    if (chrome != null) {
      chrome.close();
    }
  }

  @Test
  void theHtmlPartRendersInASandboxedFrameWhereItsScriptDoesNotRun() throws Exception {
    String reply;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      CaptureTest.expect(c.command("EHLO client.test"), "250");
      String plain = java.util.Base64.getEncoder()
          .encodeToString(("\0tester\0" + CaptureTest.PASSWORD).getBytes(StandardCharsets.UTF_8));
      CaptureTest.expect(c.command("AUTH PLAIN " + plain), "235");
      reply = c.sendMail("tester@example.com", List.of("bob@example.net"), CaptureTest.message("Seen in the console"));
    }
    UUID id = CaptureTest.idOf(reply);
    int connections = gateway.downstream().connections();

    String base = "http://127.0.0.1:" + gateway.httpPort() + "/console/";
    driver.get(base);
    chrome.awaitPresent(By.id("token"), WAIT).sendKeys(gateway.gateway().adminToken());
    driver.findElement(By.id("operator")).sendKeys("Alice Operator" + Keys.ENTER);
    chrome.await(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("nav")));
    driver.get(base + "#/message/" + id);

    chrome.await(WAIT).until(d -> "CAPTURED".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    WebElement headers = chrome.awaitPresent(By.id("capture-headers"), WAIT);
    assertThat(headers.getText()).contains("Subject").contains("Seen in the console").contains("Tester <tester@example.com>");
    assertThat(driver.findElement(By.id("capture-text")).getText()).contains("Grüße, plain text.");
    assertThat(driver.findElement(By.id("capture-attachments")).getText()).contains("invoice.pdf").contains("application/pdf");

    WebElement frame = driver.findElement(By.id("capture-html"));
    assertThat(frame.getAttribute("sandbox")).as("sandboxed with no permission: no allow-scripts").isEmpty();
    assertThat(frame.getAttribute("srcdoc")).contains("Content-Security-Policy").contains("default-src 'none'");
    driver.switchTo().frame(frame);
    try {
      WebElement greeting = chrome.awaitPresent(By.id("greeting"), WAIT);
      assertThat(greeting.getText()).isEqualTo("Hello from HTML");
      assertThat(greeting.isDisplayed()).isTrue();
      assertThat(driver.findElement(By.id("probe")).getText()).as("the part's script did not run").isEqualTo("static");
      // The remote image was not fetched: it has no pixels.
      assertThat(driver.findElement(By.id("remote")).getAttribute("naturalWidth")).isEqualTo("0");
    } finally {
      driver.switchTo().defaultContent();
    }
    assertThat(chrome.pageProblems()).as("nothing but the frame's own refusals")
        .allMatch(p -> p.contains("Content Security Policy") && p.contains("127.0.0.1:9"));
    assertThat(gateway.downstream().connections()).isEqualTo(connections);
    ((org.openqa.selenium.JavascriptExecutor) driver).executeScript("arguments[0].scrollIntoView()", headers);
    chrome.screenshot(Path.of("target", "console-screenshots", "capture.png"));
  }
}
