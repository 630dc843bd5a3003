package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.HeadlessChrome;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;

/**
 * The console's webhook endpoints page (docs/design.md §6.6), in headless chromium: a configured endpoint disabled
 * for failing shows why, its failures in a row and its last errors beside a healthy one; the Enable button enables it
 * and fills in the range it missed, which the Replay button sends.
 */
class WebhookConsoleTest {
  static final Duration WAIT = Duration.ofSeconds(30);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();
  HeadlessChrome chrome;

  @AfterEach
  void closeChrome() {
    if (chrome != null) {
      chrome.close();
    }
  }

  long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  JsonObject shop() throws Exception {
    for (Object o : new JsonObject(gateway.get("/api/v1/webhooks").body()).getJsonArray("endpoints")) {
      if (((JsonObject) o).getString("name").equals("shop")) {
        return (JsonObject) o;
      }
    }
    throw new AssertionError("no endpoint shop");
  }

  @Test
  void theEndpointsPageShowsHealthAndEnablesAndReplaysAFailingEndpoint() throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    WebhookReceiver receiver = gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(),
        r -> Answer.of(r.path().equals("/shop") ? 500 : 200))));
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("webhooks.endpoints", List.of(
        WebhookDeliveryTest.endpoint("shop", receiver.url("/shop"), WebhookDeliveryTest.secret(1), List.of("message.settled")),
        WebhookDeliveryTest.endpoint("ok", receiver.url("/ok"), WebhookDeliveryTest.secret(2), List.of("message.settled"))));
    o.put("webhooks.retrySchedule", "0s, 1h");
    o.put("webhooks.pollInterval", "50ms");
    o.put("notify.pollInterval", "100ms");
    gateway.begin(o, clock);

    String first = WebhookDeliveryTest.send(gateway.smtpPort(), 1).get(0);
    Poll.until(WAIT, "shop's first attempt failed", () -> count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = "
        + "'shop' AND attempts = 1 AND state = 'ATTEMPTED' AND lease_until IS NULL") == 1);
    clock.advance(Duration.ofDays(6)); // its second attempt comes due, fails, and it has failed for webhooks.disableAfter
    Poll.until(WAIT, "shop disabled", () -> shop().getString("state").equals("DISABLED"));
    String missed = WebhookDeliveryTest.send(gateway.smtpPort(), 1).get(0); // not recorded for shop while it is disabled
    Poll.until(WAIT, "ok got both", () -> count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = 'ok' "
        + "AND state = 'DELIVERED'") == 2);
    receiver.script(r -> Answer.of(200));
    // An operator's endpoint (no user): its events name no message, so only the admin token sees them.
    assertThat(count("SELECT count(*) FROM outbox_events WHERE type IN ('message.attempt.exhausted', 'endpoint.disabled') "
        + "AND auth_user IS NULL AND message_id <> '" + first + "'")).isEqualTo(2);

    chrome = HeadlessChrome.start(1280, 900);
    WebDriver driver = chrome.driver();
    String base = "http://127.0.0.1:" + gateway.httpPort();
    driver.get(base + "/console/");
    chrome.awaitPresent(By.id("token"), WAIT).sendKeys(gateway.gateway().adminToken());
    driver.findElement(By.id("operator")).sendKeys("Olga Operator" + Keys.ENTER);
    chrome.await(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("nav")));
    driver.findElement(By.cssSelector("[data-nav='endpoints']")).click();

    By shopCard = By.cssSelector(".endpoint[data-name='shop']");
    By okCard = By.cssSelector(".endpoint[data-name='ok']");
    chrome.await(WAIT).until(d -> "DISABLED".equals(d.findElement(shopCard).getAttribute("data-state")));
    String[] text = new String[2];
    chrome.await(WAIT).until(d -> (text[0] = d.findElement(shopCard).getText()) != null
        && (text[1] = d.findElement(okCard).getText()) != null);
    assertThat(text[0]).contains("Disabled", "every attempt failed for webhooks.disableAfter", "HTTP 500",
        first + ":2", receiver.url("/shop"));
    assertThat(driver.findElement(shopCard).findElement(By.cssSelector(".endpoint-failures")).getText()).isEqualTo("2");
    assertThat(driver.findElement(shopCard).findElements(By.cssSelector(".endpoint-errors li"))).hasSize(2);
    assertThat(driver.findElement(shopCard).findElement(By.cssSelector(".endpoint-failing-since")).getText()).isNotEqualTo("–");
    assertThat(text[1]).contains("Enabled").doesNotContain("Last errors");
    assertThat(driver.findElement(okCard).findElement(By.cssSelector(".endpoint-failures")).getText()).isEqualTo("0");
    assertThat(driver.findElement(okCard).findElements(By.cssSelector(".endpoint-enable"))).isEmpty();
    // Where it stopped recording is where a replay of what it missed starts.
    long stopped = shop().getLong("recordedThrough");
    assertThat(driver.findElement(By.id("replay-since-shop")).getAttribute("value")).isEqualTo(String.valueOf(stopped));

    driver.findElement(shopCard).findElement(By.cssSelector(".endpoint-enable")).click();
    chrome.await(WAIT).until(d -> d.findElement(By.id("endpoint-done")).getText().contains("shop enabled"));
    assertThat(driver.findElement(By.id("endpoint-done")).getText()).contains("missed events " + (stopped + 1));
    chrome.await(WAIT).until(d -> "ENABLED".equals(d.findElement(shopCard).getAttribute("data-state")));
    assertThat(receiver.requests()).noneMatch(r -> r.path().equals("/shop") && r.id().equals(missed + ":2"));

    chrome.await(WAIT).until(d -> d.findElement(By.id("replay-until-shop")).getAttribute("value").length() > 0);
    driver.findElement(shopCard).findElement(By.cssSelector(".endpoint-replay")).click();
    chrome.await(WAIT).until(d -> d.findElement(By.id("endpoint-done")).getText().contains("Replay to shop"));
    assertThat(driver.findElement(By.id("endpoint-done")).getText()).contains("1 recorded");
    Poll.until(WAIT, "the missed event delivered on the replay", () -> receiver.requests().stream()
        .anyMatch(r -> r.path().equals("/shop") && r.id().equals(missed + ":2")));
    assertThat(chrome.pageProblems()).isEmpty();
  }
}
