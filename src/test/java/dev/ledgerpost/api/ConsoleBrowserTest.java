package dev.ledgerpost.api;

import dev.ledgerpost.operate.stale.StalePart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.operate.stale.StaleGauges;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.HeadlessChrome;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.RunsAlone;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The operator console in a real browser (docs/design.md §8.3): Debian's chromium, headless, one browser for the
 * class, loading the console through a TCP proxy so that a test can cut its WebSocket for real. Each test leaves
 * the console signed in for the next; screenshots of the main pages go to target/console-screenshots/
 * (scripts/console-screenshots.sh copies two of them into docs/ for the README).
 */
@RunsAlone
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleBrowserTest {
  static final Path SHOTS = Path.of("target", "console-screenshots");
  static final Duration WAIT = Duration.ofSeconds(10);
  static final String OPERATOR = "Alice Operator";

  static final MutableClock clock = new MutableClock(Instant.now().truncatedTo(ChronoUnit.SECONDS));
  static TcpProxy proxy;
  static HeadlessChrome chrome;
  static WebDriver driver;
  static String url;
  static String base;
  static LogCapture gatewayLog;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
      if (message.text().contains("Subject: lost")) {
        return Future.succeededFuture(null); // the connection drops after the final dot: the outcome is UNKNOWN
      }
      return Future.succeededFuture(message.text().contains("Subject: refused")
          ? "554 5.7.1 Message rejected by policy" : "250 2.0.0 Ok: queued as DS" + n);
    }
  }).clock(clock)
      .with("stale.scanInterval", "100ms")
      // The stale watch's period as these tests count it; it must outlast a delivery (downstream timeouts).
      .with("stale.threshold", "10m").with("downstream.replyTimeout", "2m").with("downstream.dataTimeout", "5m")
      .with("node.id", "relay-1") // a name for the pictures, not this host's
      .with("tenants.file", dev.ledgerpost.testing.Credentials.write("tenants-", "tenants.yaml",
          "users:\n  shop:\n    messagesPerHour: 50\n  newsletter:\n    messagesPerDay: 1000\n").toString())
      .configure((g, o) -> gatewayLog = g.closeAfter(LogCapture.of(org.slf4j.Logger.ROOT_LOGGER_NAME)))
      .afterStart(g -> {
        url = g.databaseUrl();
        proxy = g.closeAfter(TcpProxy.to("127.0.0.1", g.httpPort()));
      });

  @BeforeAll
  static void start() {
    base = "http://127.0.0.1:" + proxy.port();
    chrome = HeadlessChrome.start(1280, 800);
    driver = chrome.driver();
    chrome.viewport(1280, 800);
  }

  @AfterAll
  static void stop() {
    if (chrome != null) {
      chrome.close();
    }
  }

  @Test
  @Order(1)
  void aWrongTokenIsRefusedAndNothingIsKept() {
    driver.get(base + "/console/");
    WebElement token = waitFor(By.id("token"));
    assertThat(driver.switchTo().activeElement()).as("the token field has the focus").isEqualTo(token);
    token.sendKeys("not-the-admin-token");
    driver.findElement(By.id("operator")).sendKeys(OPERATOR + Keys.ENTER); // Enter submits
    WebElement error = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("sign-in-error")));
    assertThat(error.getText()).contains("refused");
    assertThat(driver.findElement(By.id("nav")).isDisplayed()).isFalse();
    assertThat(js("return sessionStorage.getItem('ledgerpost.token')")).isNull();
    assertThat(driver.getCurrentUrl()).doesNotContain("not-the-admin-token");
  }

  @Test
  @Order(2)
  void signInThenAMailSentOverSmtpAppearsOnTheLivePageWithinTwoSeconds() throws Exception {
    signIn();
    assertThat(driver.getCurrentUrl()).doesNotContain(gateway.gateway().adminToken());
    assertThat(js("return document.getElementById('token').value")).as("the hidden sign-in form keeps no copy").isEqualTo("");
    assertThat(js("return JSON.stringify(localStorage)")).as("nothing outlives the tab").isEqualTo("{}");
    assertThat(js("return sessionStorage.getItem('ledgerpost.token')")).isEqualTo(gateway.gateway().adminToken());
    awaitLive();

    String id = sendMail("carol@example.com", "dave@example.net", "hello");
    long sent = System.nanoTime();
    WebElement row = wait(Duration.ofSeconds(2)).until(ExpectedConditions.presenceOfElementLocated(row(id)));
    assertThat(Duration.ofNanos(System.nanoTime() - sent)).isLessThan(Duration.ofSeconds(2));
    assertThat(row.getText()).contains("carol@example.com");
    wait(WAIT).until(d -> "SENT".equals(d.findElement(row(id)).getAttribute("data-status"))
        && "true".equals(d.findElement(row(id)).getAttribute("data-filled")));
    assertThat(driver.findElements(By.cssSelector("#ledger-table thead th")).stream().map(WebElement::getText).toList())
        .as("a To column; no Subject, which the ledger does not keep").contains("TO").doesNotContain("SUBJECT");
    assertThat(driver.findElement(row(id)).findElement(By.cssSelector("td.to")).getText()).isEqualTo("dave@example.net");
    // Local time with its offset from UTC (the machine's zone, whatever it is), then in a zone that is not UTC.
    assertThat(driver.findElement(row(id)).findElement(By.tagName("time")).getText())
        .matches("\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} UTC([+-]\\d{1,2}(:\\d{2})?)?");
    chrome.timeZone("Asia/Kolkata");
    try {
      driver.navigate().refresh();
      wait(WAIT).until(d -> d.findElement(row(id)).findElement(By.tagName("time")).getText().endsWith(" UTC+5:30"));
      assertThat(driver.findElement(By.cssSelector("label[for='filter-since']")).getText()).endsWith("(UTC+5:30)");
    } finally {
      chrome.timeZone("");
    }
    driver.navigate().refresh();
    waitFor(row(id));

    // A few more, one refused by the downstream, for a page worth a screenshot.
    sendMail("billing@example.com", "erin@example.net", "invoice 42");
    String refused = sendMail("news@example.com", "frank@example.org", "refused");
    sendMail("carol@example.com", "grace@example.net", "lunch?");
    wait(WAIT).until(d -> "FAILED_PERM".equals(d.findElement(row(refused)).getAttribute("data-status")));
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#ledger-table tbody tr")).size() >= 4
        && d.findElements(By.cssSelector("#ledger-table tbody tr[data-status='PENDING']")).isEmpty()
        && d.findElements(By.cssSelector("#ledger-table tbody tr[data-filled='false']")).isEmpty()
        && d.findElements(By.cssSelector("#ledger-table tbody tr.fresh")).isEmpty());
    assertThat(scrollWidth()).as("no horizontal scrolling at 1280 px").isLessThanOrEqualTo(1280);
    chrome.screenshot(SHOTS.resolve("live.png"));

    // The filters: a recipient the ledger knows, through the API's recipient filter.
    driver.findElement(By.id("filter-recipient")).sendKeys("grace@example.net" + Keys.ENTER);
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#ledger-table tbody tr")).size() == 1);
    assertThat(driver.findElement(By.cssSelector("#ledger-table tbody tr")).getText()).contains("carol@example.com");
    driver.findElement(By.id("filter-clear")).click();
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#ledger-table tbody tr")).size() >= 4);

    // Tags (docs/data-model.md §5.17): labels after the Message-ID, a filter of their own, and the message's facts.
    String tagged = sendRaw("shop@example.com", "heidi@example.net", "X-Ledgerpost-Tag: billing\r\n"
        + "X-Ledgerpost-Metadata: order=A-17\r\nSubject: tagged\r\nMessage-ID: <tagged.console@example.com>\r\n\r\nbody")
        .replaceAll("(?s).*queued as ([0-9a-f-]{36}).*", "$1");
    wait(WAIT).until(d -> d.findElements(row(tagged)).size() == 1
        && d.findElement(row(tagged)).findElements(By.cssSelector(".tag")).size() == 1);
    assertThat(driver.findElement(row(tagged)).findElement(By.cssSelector(".tag")).getText()).isEqualTo("billing");
    driver.findElement(By.id("filter-tag")).sendKeys("billing" + Keys.ENTER);
    wait(WAIT).until(d -> d.getCurrentUrl().contains("tag=billing")
        && d.findElements(By.cssSelector("#ledger-table tbody tr")).size() == 1);
    assertThat(driver.findElement(By.cssSelector("#ledger-table tbody tr")).getAttribute("data-id")).isEqualTo(tagged);
    driver.get(base + "/console/#/message/" + tagged);
    wait(WAIT).until(d -> d.findElement(By.id("message-facts")).getText().contains("order = A-17"));
    assertThat(driver.findElement(By.id("message-facts")).getText()).contains("Tags").contains("billing");
    driver.get(base + "/console/#/live");
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#ledger-table tbody tr")).size() >= 5);
  }

  @Test
  @Order(3)
  void olderPagesComeByKeysetPaging() throws Exception {
    String sender = "history@example.com";
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 55; i++) {
      ids.add(dev.ledgerpost.platform.db.LedgerIds.next()); // time-ordered, as the gateway's own ids: a new mail's sorts above
    }
    LedgerRows.insertPending(url, ids, Instant.now().minus(Duration.ofMinutes(2)));
    LedgerRows.string(url, "UPDATE messages SET mail_from = '" + sender + "', status = 'SENT', version = 2, settled_at = now() "
        + "WHERE id = ANY(ARRAY[" + String.join(",", ids.stream().map(id -> "'" + id + "'::uuid").toList()) + "]) RETURNING 1");
    signedIn("#/live?sender=history%40example.com");
    By rows = By.cssSelector("#ledger-table tbody tr");
    wait(WAIT).until(d -> d.findElements(rows).size() == 50);
    assertThat(driver.findElement(By.id("newer")).isEnabled()).isFalse();
    List<String> first = driver.findElements(rows).stream().map(e -> e.getAttribute("data-id")).toList();

    driver.findElement(By.id("older")).click();
    wait(WAIT).until(d -> "2".equals(d.findElement(By.id("ledger-where")).getAttribute("data-page"))
        && d.findElements(rows).size() == 5);
    List<String> second = driver.findElements(rows).stream().map(e -> e.getAttribute("data-id")).toList();
    assertThat(second).doesNotContainAnyElementsOf(first);
    List<String> all = new ArrayList<>(first);
    all.addAll(second);
    assertThat(all).as("two pages, newest id first, every message once")
        .containsExactlyElementsOf(ids.stream().map(UUID::toString).sorted(java.util.Comparator.reverseOrder()).toList());
    assertThat(driver.findElement(By.id("older")).isEnabled()).isFalse();

    // A message sent while an older page is on screen is first on the newest page.
    awaitLive();
    String fresh = sendMail(sender, "mallory@example.net", "while paging");
    driver.findElement(By.id("newer")).click();
    wait(WAIT).until(d -> "1".equals(d.findElement(By.id("ledger-where")).getAttribute("data-page"))
        && d.findElements(rows).size() == 50 && fresh.equals(d.findElements(rows).get(0).getAttribute("data-id")));
  }

  @Test
  @Order(4)
  void aMailSentWhileTheWebSocketIsCutAppearsAfterTheReconnect() throws Exception {
    signedIn("#/live");
    awaitLive();
    String before = sendMail("carol@example.com", "heidi@example.net", "before the cut");
    waitFor(row(before));
    js("window.notReloaded = true");

    proxy.cutAll();
    wait(WAIT).until(d -> "reconnecting".equals(d.findElement(By.id("connection")).getAttribute("data-state")));
    assertThat(driver.findElement(By.id("connection")).getText()).contains("Reconnecting");
    String during = sendMail("ivan@example.com", "judy@example.net", "during the cut");
    assertThat(driver.findElements(row(during))).as("nothing can reach the page while it is cut").isEmpty();
    chrome.screenshot(SHOTS.resolve("reconnecting.png"));

    proxy.heal();
    wait(Duration.ofSeconds(15)).until(d -> "live".equals(d.findElement(By.id("connection")).getAttribute("data-state")));
    assertThat(driver.findElement(By.id("connection")).getAttribute("data-since")).as("resumed with since=<last seq>")
        .matches("\\d+");
    wait(WAIT).until(ExpectedConditions.presenceOfElementLocated(row(during)));
    assertThat(js("return window.notReloaded === true")).as("the page was not reloaded").isEqualTo(true);
    assertThat(driver.findElements(row(before))).hasSize(1);
  }

  @Test
  @Order(6)
  void aStalePendingRowNeedsAttentionAndIsResolvedFromItsPage() throws Exception {
    signedIn("#/attention");
    UUID id = UUID.randomUUID();
    insert(id, "PENDING", clock.instant().minus(Duration.ofMinutes(1)), "stuck@example.com", "<stuck-1@example.com>");
    // As old, but opened by another gateway on this ledger whose retry part holds its outcome: not stale, not listed.
    UUID held = UUID.randomUUID();
    insert(held, "PENDING", clock.instant().minus(Duration.ofMinutes(1)), "stuck@example.com", "<held-1@example.com>");
    LedgerRows.string(url, "UPDATE messages SET node_id = 'console-elsewhere' WHERE id = '" + held + "' RETURNING 1");
    LedgerRows.string(url, "INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at, held) VALUES ('console-elsewhere', "
        + "'elsewhere', 1, now(), now() + interval '1 hour', ARRAY['" + held + "'::uuid]) RETURNING id"); // alive for the test
    assertThat(new JsonObject(gateway.get("/api/v1/attention").body()).getJsonArray("items").encode())
        .as("a minute old: not stale yet").doesNotContain(id.toString());

    clock.advance(Duration.ofMinutes(11)); // past stale.threshold (10 min) by the stale watch's clock
    WebElement row = wait(WAIT).until(ExpectedConditions.presenceOfElementLocated(row(id.toString())));
    assertThat(row.getText()).contains("stuck@example.com").contains("12 min");
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    wait(WAIT).until(d -> gauges.stalePendingMessages() == 1
        && text(d, By.cssSelector("#gauge-stale .card-value")).equals("1")
        && badge(d) == gauges.stalePendingMessages() + gauges.unknownMessages());
    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_pending_stale_messages " + gauges.stalePendingMessages() + ".0")
        .contains("ledgerpost_unknown_messages " + gauges.unknownMessages() + ".0");
    assertThat(text(driver, By.cssSelector("#gauge-unknown .card-value"))).isEqualTo(String.valueOf(gauges.unknownMessages()));
    assertThat(driver.findElements(row(held.toString()))).as("held by a live node").isEmpty();
    wait(WAIT).until(d -> !d.findElements(By.cssSelector("#pending-chart svg#chart-age")).isEmpty());
    chrome.screenshot(SHOTS.resolve("attention.png"));

    // By keyboard: Tab to the row's link, Enter opens the message page, whose heading takes the focus.
    WebElement link = driver.findElement(By.cssSelector("tr[data-id='" + id + "'] a"));
    for (int i = 0; i < 60 && !driver.switchTo().activeElement().equals(link); i++) {
      driver.switchTo().activeElement().sendKeys(Keys.TAB);
    }
    assertThat(driver.switchTo().activeElement()).as("the row's link is reachable by Tab").isEqualTo(link);
    link.sendKeys(Keys.ENTER);
    wait(WAIT).until(d -> d.getCurrentUrl().endsWith("#/message/" + id));
    wait(WAIT).until(d -> "PENDING".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    assertThat(driver.switchTo().activeElement().getTagName()).isEqualTo("h1");
    String timeline = waitFor(By.id("timeline")).getText();
    assertThat(timeline).contains("Received; the ledger opened it", "b@example.net", "250 2.1.5 ok", "Not settled",
        "No live node holds an outcome for it");
    assertThat(flat(By.id("message-facts"))).contains("Node (not recorded)");

    resolveOnPage("NOT_DELIVERED", "the smarthost's log has no trace of it");
    WebElement done = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("resolve-done")));
    assertThat(done.getText()).startsWith("Resolved: not delivered (version 2), by " + OPERATOR).doesNotContain("Resolved: Resolved");
    assertThat(driver.findElements(By.id("resolve-intro"))).as("the panel's invitation goes with the form").isEmpty();
    assertThat(text(driver, By.id("resolve-title"))).isEqualTo("Resolved");
    wait(WAIT).until(d -> "RESOLVED_NOT_DELIVERED".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    wait(WAIT).until(d -> text(d, By.id("timeline")).contains("Resolved as not delivered by " + OPERATOR));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resolutions WHERE message_id = '" + id + "'")).isEqualTo(1);
    assertThat(LedgerRows.string(url, "SELECT operator || '|' || outcome || '|' || note FROM resolutions WHERE message_id = '"
        + id + "'")).isEqualTo(OPERATOR + "|NOT_DELIVERED|the smarthost's log has no trace of it");

    // Its row changed: gone from "needs attention", resolved in the live ledger.
    driver.findElement(By.cssSelector("[data-nav='attention']")).click();
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#attention-table")).size() == 1
        && d.findElements(row(id.toString())).isEmpty()
        && badge(d) == 0);
    driver.get(base + "/console/#/live?sender=stuck%40example.com");
    wait(WAIT).until(d -> "RESOLVED_NOT_DELIVERED".equals(d.findElement(row(id.toString())).getAttribute("data-status")));
    assertThat(driver.findElement(row(id.toString())).getText()).contains("Resolved: not delivered");

    // The held one's page names the node that opened it and the one whose retry part holds its outcome.
    driver.get(base + "/console/#/message/" + held);
    wait(WAIT).until(d -> "PENDING".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    wait(WAIT).until(d -> text(d, By.id("timeline")).contains(
        "The retry part of node console-elsewhere holds its known outcome (journaled on disk) and is writing it to the ledger."));
    assertThat(text(driver, By.id("timeline"))).contains("Over SMTP, by node console-elsewhere.");
    assertThat(flat(By.id("message-facts"))).contains("Node console-elsewhere");
    LedgerRows.string(url, "DELETE FROM nodes WHERE id = 'console-elsewhere' RETURNING id");
    LedgerRows.string(url, "UPDATE messages SET status = 'SENT', version = 2, settled_at = now() WHERE id = '" + held + "' RETURNING 1");
  }

  // Before the stale test moves the stale watch's clock: this message must not be stale while it is PENDING
  // (a message.stale event would be a third one on its outbox line).
  @Test
  @Order(5)
  void aResolutionThatSomeoneElseMadeFirstIsShownAsAConflict() throws Exception {
    signedIn("#/live");
    awaitLive();
    String id = sendMail("reports@example.com", "olivia@example.net", "lost"); // the downstream's reply never comes
    wait(WAIT).until(d -> "UNKNOWN".equals(d.findElement(row(id)).getAttribute("data-status")));
    driver.findElement(By.cssSelector("tr[data-id='" + id + "'] a")).click();
    wait(WAIT).until(d -> "UNKNOWN".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    wait(WAIT).until(d -> text(d, By.id("timeline")).contains("Outbox: 2 of 2 events published"));
    assertThat(text(driver, By.id("timeline"))).contains("Over SMTP, from 127.0.0.1 (HELO client.test)",
        "olivia@example.net: 250 2.1.5 Recipient ok", "No final reply", "may or may not have delivered it", "Settled: Unknown",
        "No receipts: receipts come from subscribers that acknowledge events", "this console only shows them")
        .doesNotContain("No subscriber acknowledged");
    assertThat(flat(By.id("message-facts"))).contains(id, "client.test", "Node " + gateway.gateway().nodeId());
    assertThat(text(driver, By.id("timeline"))).contains("by node " + gateway.gateway().nodeId());
    driver.findElement(By.cssSelector("input[name='outcome'][value='NOT_DELIVERED']")).click();
    driver.findElement(By.id("resolve-note")).sendKeys("bounced, says the recipient");
    chrome.screenshot(SHOTS.resolve("message.png"));

    // Another operator resolves it first, through the API.
    assertThat(gateway.post("/api/v1/messages/" + id + "/resolution",
        "{\"outcome\": \"DELIVERED\", \"note\": \"in the inbox\", \"operator\": \"bob\"}").statusCode()).isEqualTo(200);
    WebElement changed = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("resolve-changed")));
    assertThat(changed.getText()).contains("changed while you were looking", "Resolved: delivered");

    driver.findElement(By.id("resolve-button")).click();
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("resolve-dialog")));
    driver.findElement(By.id("resolve-confirm")).click();
    WebElement conflict = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("resolve-error")));
    assertThat(conflict.getText()).contains("Not recorded", "Resolved: delivered", "someone else resolved it");
    assertThat(conflict.getAttribute("data-conflict")).isEqualTo("RESOLVED_DELIVERED");
    assertThat(LedgerRows.string(url, "SELECT string_agg(operator || '|' || outcome, ',') FROM resolutions WHERE message_id = '"
        + id + "'")).as("one resolution, the first one").isEqualTo("bob|DELIVERED");
    wait(WAIT).until(d -> text(d, By.id("timeline")).contains("Resolved as delivered by bob"));
  }

  @Test
  @Order(7)
  void bulkResolveNeedsAPreviewAndTheTypedCountThenResolvesEachMessage() throws Exception {
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id);
      insert(id, "UNKNOWN", Instant.now().minus(Duration.ofMinutes(30 + i)), "outage@example.com", "<outage-" + i + "@example.com>");
    }
    // Needs attention counts their stale raises too: none, as for every UNKNOWN row the stale watch never raised.
    signedIn("#/attention");
    for (UUID id : ids) {
      WebElement raised = wait(WAIT).until(ExpectedConditions.presenceOfElementLocated(By.cssSelector(
          "tr[data-id='" + id + "'] td:last-child")));
      assertThat(raised.getText()).as("the Raised cell of an UNKNOWN row").isEqualTo("0");
    }
    signedIn("#/bulk");
    new org.openqa.selenium.support.ui.Select(waitFor(By.id("bulk-status"))).selectByValue("UNKNOWN");
    driver.findElement(By.id("bulk-sender")).sendKeys("outage@example.com");
    driver.findElement(By.id("bulk-preview")).click();
    wait(WAIT).until(d -> "3".equals(d.findElement(By.id("bulk-count")).getAttribute("data-count")));
    assertThat(driver.findElements(By.cssSelector("#bulk-table tbody tr"))).hasSize(3);
    driver.findElement(By.id("bulk-note")).sendKeys("smarthost outage 10:00-10:20; never queued");
    WebElement typed = driver.findElement(By.id("bulk-typed"));
    WebElement go = driver.findElement(By.id("bulk-resolve"));
    typed.sendKeys("2");
    assertThat(go.isEnabled()).as("the wrong count does not confirm").isFalse();
    typed.clear();
    typed.sendKeys("3");
    assertThat(go.isEnabled()).isTrue();
    chrome.screenshot(SHOTS.resolve("bulk.png"));
    go.click();
    WebElement summary = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("bulk-summary")));
    assertThat(summary.getText()).contains("Resolved 3 of 3");
    for (UUID id : ids) {
      assertThat(LedgerRows.string(url, "SELECT operator || '|' || outcome FROM resolutions WHERE message_id = '" + id + "'"))
          .isEqualTo(OPERATOR + "|NOT_DELIVERED");
      assertThat(LedgerRows.status(url, id)).isEqualTo("RESOLVED_NOT_DELIVERED");
    }
  }

  @Test
  @Order(8)
  void aPhoneWidthAndTheDarkSchemeAreReadable() throws Exception {
    String id = sendMail("carol@example.com", "kim@example.net", "on the phone");
    signedIn("#/live");
    waitFor(row(id));
    String lightBackground = (String) js("return getComputedStyle(document.body).backgroundColor");
    chrome.colorScheme("dark");
    wait(WAIT).until(d -> !lightBackground.equals(js("return getComputedStyle(document.body).backgroundColor")));
    chrome.screenshot(SHOTS.resolve("live-dark.png"));

    chrome.viewport(390, 844);
    driver.get(base + "/console/#/message/" + id);
    wait(WAIT).until(d -> "SENT".equals(d.findElement(By.id("message-status")).getAttribute("data-status")));
    assertThat(scrollWidth()).as("no horizontal scrolling at a phone's width").isLessThanOrEqualTo(390);
    chrome.screenshot(SHOTS.resolve("message-phone-dark.png"));
    driver.get(base + "/console/#/live");
    waitFor(row(id));
    assertThat(scrollWidth()).isLessThanOrEqualTo(390);
    chrome.colorScheme("light");
    chrome.screenshot(SHOTS.resolve("live-phone.png"));
    chrome.viewport(1280, 800);

    // A client's retry of a relayed message (the same bytes, docs/contract.md §1.13) is on the first one's timeline.
    String again = "Subject: again\r\nMessage-ID: <again.1@example.com>\r\n\r\nbody";
    Matcher first = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(sendRaw("dan@example.com", "lee@example.net", again));
    assertThat(first.find()).isTrue();
    assertThat(sendRaw("dan@example.com", "lee@example.net", again)).startsWith("250 2.0.0 Ok: already relayed as " + first.group(1));
    driver.get(base + "/console/#/message/" + first.group(1));
    wait(WAIT).until(d -> text(d, By.id("timeline")).contains("A client resubmitted it"));
    assertThat(text(driver, By.id("timeline"))).contains("From 127.0.0.1 (HELO client.test)",
        "heard 250 already relayed; nothing was sent again");
  }

  @Test
  @Order(9)
  void theQuotasPageShowsWhoIsLimitedFirst() throws Exception {
    // shop used up its hour (as the open's count would have written it); newsletter sent nothing yet.
    try (java.sql.Connection c = dev.ledgerpost.testing.TestDatabase.connect(url);
         java.sql.PreparedStatement st = c.prepareStatement("INSERT INTO quota_usage (user_name, hour_start, hour_used, "
             + "hour_refused, day_start, day_used) VALUES ('shop', ?, 50, 3, ?, 50)")) {
      st.setObject(1, java.time.OffsetDateTime.ofInstant(clock.instant().truncatedTo(ChronoUnit.HOURS), java.time.ZoneOffset.UTC));
      st.setObject(2, java.time.OffsetDateTime.ofInstant(clock.instant().truncatedTo(ChronoUnit.DAYS), java.time.ZoneOffset.UTC));
      st.executeUpdate();
    }
    signedIn("#/quotas");
    WebElement first = wait(WAIT).until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#quotas-rows tr:first-child")));
    assertThat(first.getAttribute("data-user")).isEqualTo("shop");
    assertThat(first.getAttribute("class")).contains("limited");
    assertThat(first.getText()).contains("50 / 50", "3 / 0");
    assertThat(text(driver, By.id("quotas-summary"))).isEqualTo("1 user(s) limited now.");
    assertThat(driver.findElement(By.cssSelector("#quotas-rows tr[data-user='newsletter']")).getText()).contains("0 / 1000", "own");
    chrome.screenshot(SHOTS.resolve("quotas.png"));
  }

  @Test
  @Order(10)
  void theUsagePageDrawsTheMessagesOfTheLast30DaysPerUser() {
    // the mail of the tests before: stacked bars per day (the page's policy allows them: no inline style), totals per user
    signedIn("#/usage");
    wait(WAIT).until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#usage-chart svg rect.usage-bar")));
    List<WebElement> rows = driver.findElements(By.cssSelector("#usage-totals tbody tr"));
    assertThat(rows).isNotEmpty();
    long total = rows.stream().mapToLong(r -> Long.parseLong(r.findElements(By.tagName("td")).get(1).getText())).sum();
    assertThat(total).isPositive();
    chrome.screenshot(SHOTS.resolve("usage.png"));
  }

  @Test
  @Order(11)
  void theSuppressionsPageListsAddsRemovesAndImportsEntriesAndShowsAddressesAsText() throws Exception {
    // An entry added through the API, its address and reason markup if anything rendered them as such.
    String hostile = "\"<img src=x onerror=window.pwned=1>\"@example.com";
    HttpResponse<String> added = gateway.post("/api/v1/suppressions", new JsonObject().put("address", hostile)
        .put("scope", "global").put("reason", "<script>window.pwned=2</script> asked").put("operator", "api-user").encode());
    assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
    String apiId = new JsonObject(added.body()).getString("id");
    // One the smarthost's refusals added, with the ledger row and the reply that caused it.
    UUID ledgerRow = UUID.randomUUID();
    insert(ledgerRow, "FAILED_PERM", clock.instant(), "app@example.com", "<refused@example.com>");
    String reply = "550 5.1.1 <gone@example.net>: <b>no</b> such user";
    LedgerRows.string(url, "INSERT INTO suppressions (address, scope, reason, category, source, message_id, reply, added_by, "
        + "expires_at) VALUES ('gone@example.net', 'user:shop', 'refused by the smarthost 1 time within 24h', "
        + "'invalid_recipient', 'refusal', '" + ledgerRow + "', '" + reply + "', 'smarthost refusals', now() + interval '90 days') "
        + "RETURNING 1");

    signedIn("#/suppressions");
    WebElement apiRow = waitFor(row(apiId));
    assertThat(apiRow.findElement(By.className("suppression-address")).getText()).isEqualTo(hostile);
    assertThat(apiRow.findElement(By.className("suppression-reason")).getText()).isEqualTo("<script>window.pwned=2</script> asked");
    assertThat(apiRow.findElement(By.className("suppression-scope")).getText()).isEqualTo("global");
    assertThat(apiRow.findElement(By.className("suppression-added-by")).getText()).isEqualTo("api-user");
    assertThat(driver.findElements(By.cssSelector("#suppressions-rows img, #suppressions-rows script, #suppressions-rows b")))
        .as("text, never markup").isEmpty();
    assertThat(js("return window.pwned === undefined")).isEqualTo(true);
    WebElement refused = driver.findElement(By.xpath("//tbody[@id='suppressions-rows']/tr[td[1]='gone@example.net']"));
    assertThat(refused.findElement(By.className("suppression-reply")).getText()).isEqualTo(reply);
    assertThat(refused.findElement(By.cssSelector(".suppression-message a")).getAttribute("href"))
        .endsWith("#/message/" + ledgerRow);
    assertThat(refused.getText()).contains("user:shop", "(invalid_recipient)", "Smarthost refusals", "smarthost refusals");

    // Added through the form: named after the signed-in operator, and on the list.
    driver.findElement(By.id("suppression-address")).sendKeys("Form@Example.ORG");
    WebElement scope = driver.findElement(By.id("suppression-scope"));
    scope.clear();
    scope.sendKeys("user:shop");
    driver.findElement(By.id("suppression-reason")).sendKeys("asked by phone");
    driver.findElement(By.id("suppression-add-button")).click();
    wait(WAIT).until(ExpectedConditions.textToBePresentInElementLocated(By.id("suppressions-done"), "Added Form@example.org (user:shop)"));
    String formId = LedgerRows.string(url, "SELECT id::text FROM suppressions WHERE address = 'Form@example.org' AND "
        + "scope = 'user:shop' AND added_by = '" + OPERATOR + "' AND reason = 'asked by phone'");
    assertThat(formId).isNotNull();
    assertThat(waitFor(row(formId)).findElement(By.className("suppression-address")).getText()).isEqualTo("Form@example.org");

    // Removed: gone from the table and from the page.
    waitFor(row(formId)).findElement(By.className("suppression-remove")).click();
    wait(WAIT).until(ExpectedConditions.textToBePresentInElementLocated(By.id("suppressions-done"), "Removed Form@example.org (user:shop)."));
    wait(WAIT).until(d -> d.findElements(row(formId)).isEmpty());
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM suppressions WHERE id = '" + formId + "'")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'suppression.removed' AND "
        + "payload->>'removedBy' = '" + OPERATOR + "'")).as("the remover named").isEqualTo(1);

    // A CSV file with a bad line: nothing imported, the line named. Then a good one.
    Path bad = GatewayHarness.tempDir("import-").resolve("bad.csv");
    java.nio.file.Files.writeString(bad, "address,scope,reason\nimported1@example.com,,fine\nnot-an-address,,x\n");
    driver.findElement(By.id("suppressions-import-file")).sendKeys(bad.toAbsolutePath().toString());
    driver.findElement(By.id("suppressions-import-button")).click();
    wait(WAIT).until(ExpectedConditions.textToBePresentInElementLocated(By.id("suppressions-done"),
        "Nothing imported from bad.csv: line 3: address not-an-address is not a mailbox"));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM suppressions WHERE address LIKE 'imported%'")).isZero();
    Path good = bad.resolveSibling("good.csv");
    java.nio.file.Files.writeString(good, "imported1@example.com,,fine\nimported2@example.com,user:shop,\"asked, twice\"\n");
    driver.findElement(By.id("suppressions-import-file")).sendKeys(good.toAbsolutePath().toString());
    driver.findElement(By.id("suppressions-import-button")).click();
    wait(WAIT).until(ExpectedConditions.textToBePresentInElementLocated(By.id("suppressions-done"),
        "Imported good.csv: 2 added, 0 renewed."));
    wait(WAIT).until(d -> d.findElement(By.id("suppressions-rows")).getText().contains("imported2@example.com"));
    assertThat(text(driver, By.id("suppressions-rows"))).contains("asked, twice");

    // The filter: by address, as the API filters.
    driver.findElement(By.id("suppressions-filter-address")).sendKeys("gone@example.net" + Keys.ENTER); // the header covers the button
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#suppressions-rows tr")).size() == 1);
    assertThat(text(driver, By.id("suppressions-rows"))).contains("gone@example.net").doesNotContain("imported1@example.com");
    chrome.screenshot(SHOTS.resolve("suppressions.png"));
  }

  @Test
  @Order(11)
  void theBouncesPageListsBouncedRecipientsAndTheMessageShowsEachRecipientsDeliveryTimeline() throws Exception {
    // Two relayed messages with tracking facts as the log follower records them: the replies are a remote server's words.
    UUID invalid = UUID.randomUUID();
    UUID full = UUID.randomUUID();
    LedgerRows.insert(url, invalid, "SENT", "ACCEPTED", clock.instant().minusSeconds(120), "<bounced-invalid@example.com>");
    LedgerRows.insert(url, full, "SENT", "ACCEPTED", clock.instant().minusSeconds(60), "<bounced-full@example.com>");
    String hostile = "550 5.1.1 <b@example.net>: <img src=x onerror=window.pwned=3> no such user";
    fact(invalid, "deferred", clock.instant().minusSeconds(100), "4.4.1", "connect to mx.example.net[192.0.2.1]:25: Connection refused",
        "connection", null);
    fact(invalid, "bounced", clock.instant().minusSeconds(90), "5.1.1", hostile, "invalid_recipient", "mx.example.net[192.0.2.1]:25");
    fact(full, "bounced", clock.instant().minusSeconds(50), "5.2.2", "552 5.2.2 Mailbox full", "mailbox_full", "mx.example.net[192.0.2.1]:25");

    signedIn("#/bounces");
    WebElement invalidRow = waitFor(By.xpath("//tbody[@id='bounces-rows']/tr[.//a[text()='" + invalid + "']]"));
    assertThat(invalidRow.findElement(By.className("bounce-recipient")).getText()).isEqualTo("b@example.net");
    assertThat(invalidRow.findElement(By.className("bounce-category")).getText()).startsWith("invalid_recipient");
    assertThat(invalidRow.findElement(By.className("bounce-dsn")).getText()).isEqualTo("5.1.1");
    assertThat(invalidRow.findElement(By.className("bounce-reply")).getText()).isEqualTo(hostile);
    waitFor(By.xpath("//tbody[@id='bounces-rows']/tr[.//a[text()='" + full + "']]"));
    assertThat(driver.findElements(By.cssSelector("#bounces-rows tr"))).as("the deferral is no bounce").hasSize(2);
    assertThat(driver.findElements(By.cssSelector("#bounces-rows img"))).as("text, never markup").isEmpty();

    // The category filter: the list's category= (and the detail's facts of that category only).
    new org.openqa.selenium.support.ui.Select(driver.findElement(By.id("bounces-category"))).selectByValue("mailbox_full");
    js("document.getElementById('bounces-apply').click()"); // the sticky header may cover the button
    wait(WAIT).until(d -> d.findElements(By.cssSelector("#bounces-rows tr")).size() == 1
        && d.findElement(By.id("bounces-rows")).getText().contains(full.toString()));
    chrome.screenshot(SHOTS.resolve("bounces.png"));

    // The message's timeline: the recipient's facts in time order, each with its state, host, code, category and reply.
    driver.get(base + "/console/#/message/" + invalid);
    waitFor(By.cssSelector("#delivery .delivery-fact[data-state='bounced']"));
    List<WebElement> facts = driver.findElements(By.cssSelector("#delivery li[data-address='b@example.net'] .delivery-fact"));
    assertThat(facts).extracting(f -> f.getAttribute("data-state")).containsExactly("deferred", "bounced");
    assertThat(facts.get(0).findElement(By.className("delivery-category")).getText()).isEqualTo("connection");
    assertThat(facts.get(1).findElement(By.className("delivery-host")).getText()).isEqualTo("mx.example.net[192.0.2.1]:25");
    assertThat(facts.get(1).findElement(By.className("delivery-dsn")).getText()).isEqualTo("5.1.1");
    assertThat(facts.get(1).findElement(By.className("delivery-reply")).getText()).isEqualTo(hostile);
    assertThat(facts.get(1).findElement(By.className("delivery-source")).getText()).contains("postfix-log");
    assertThat(driver.findElements(By.cssSelector("#delivery img"))).as("text, never markup").isEmpty();
    assertThat(js("return window.pwned === undefined")).isEqualTo(true);
    chrome.screenshot(SHOTS.resolve("message-delivery.png"));
  }

  @Test
  @Order(12)
  void theBrowserSawNoPolicyViolationOrScriptErrorAndTheGatewayLoggedNoToken() {
    // A cut connection's failed requests are expected; anything the page's policy refused or a script threw is not.
    assertThat(chrome.pageProblems()).isEmpty();
    assertThat(gatewayLog.linesContaining(gateway.gateway().adminToken())).as("the token in the gateway's log").isEmpty();
  }

  // --- helpers

  /** Signs in (Enter submits) unless the console is signed in already, then opens {@code route}. */
  static void signedIn(String route) {
    driver.get(base + "/console/" + route);
    waitFor(By.cssSelector("#sign-in:not([hidden]), #nav:not([hidden])"));
    if (driver.findElement(By.id("nav")).isDisplayed()) {
      return;
    }
    signIn();
    driver.get(base + "/console/" + route);
  }

  static void signIn() {
    driver.get(base + "/console/");
    waitFor(By.id("token")).sendKeys(gateway.gateway().adminToken());
    WebElement operator = driver.findElement(By.id("operator"));
    operator.clear();
    operator.sendKeys(OPERATOR + Keys.ENTER);
    wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("nav")));
    assertThat(driver.findElement(By.id("operator-name")).getText()).isEqualTo(OPERATOR);
  }

  static void awaitLive() {
    wait(WAIT).until(d -> "live".equals(d.findElement(By.id("connection")).getAttribute("data-state")));
  }

  static void resolveOnPage(String outcome, String note) {
    driver.findElement(By.cssSelector("input[name='outcome'][value='" + outcome + "']")).click();
    driver.findElement(By.id("resolve-note")).sendKeys(note);
    driver.findElement(By.id("resolve-button")).click();
    WebElement dialog = wait(WAIT).until(ExpectedConditions.visibilityOfElementLocated(By.id("resolve-dialog")));
    assertThat(dialog.getText()).contains("Confirm the resolution", OPERATOR);
    assertThat(driver.switchTo().activeElement().getAttribute("id")).as("the safe choice has the focus").isEqualTo("resolve-cancel");
    // Nothing is written before the confirmation.
    driver.findElement(By.id("resolve-confirm")).click();
  }

  /** The gateway's reply to one message sent as {@code message}. */
  static String sendRaw(String from, String to, String message) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail(from, List.of(to), message);
    }
  }

  static String sendMail(String from, String to, String subject) throws Exception {
    String reply = sendRaw(from, to, "Subject: " + subject + "\r\nMessage-ID: <" + subject.replace(' ', '-')
        + "." + UUID.randomUUID().toString().substring(0, 8) + "@example.com>\r\n\r\nbody");
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    if (m.find()) {
      return m.group(1);
    }
    // A refusal names no id: find the message in the ledger by its subject's Message-ID.
    return LedgerRows.string(url, "SELECT id FROM messages WHERE message_id_header LIKE '<" + subject.replace(' ', '-')
        + ".%' ORDER BY received_at DESC LIMIT 1");
  }

  static void insert(UUID id, String status, Instant receivedAt, String sender, String messageId) throws Exception {
    LedgerRows.insert(url, id, status, status, receivedAt, messageId);
    LedgerRows.string(url, "UPDATE messages SET mail_from = '" + sender + "'"
        + ("UNKNOWN".equals(status) ? ", settled_at = received_at + interval '2 seconds'" : "")
        + " WHERE id = '" + id + "' RETURNING 1");
  }

  /** One tracking fact of recipient 0 of {@code id}, as the log follower writes it (docs/data-model.md §5.24). */
  static void fact(UUID id, String state, Instant at, String dsn, String reply, String category, String host) throws Exception {
    try (java.sql.Connection c = dev.ledgerpost.testing.TestDatabase.connect(url);
        java.sql.PreparedStatement st = c.prepareStatement("INSERT INTO delivery_facts (message_id, idx, state, at, remote_host, dsn, "
            + "reply, category, rule, source, evidence, queue_id, event_key) VALUES (?, 0, ?, ?, ?, ?, ?, ?, NULL, 'postfix-log', "
            + "'a log line', 'DS1', ?)")) {
      st.setObject(1, id);
      st.setString(2, state);
      st.setTimestamp(3, java.sql.Timestamp.from(at));
      st.setString(4, host);
      st.setString(5, dsn);
      st.setString(6, reply);
      st.setString(7, category);
      st.setBytes(8, (id + state + at).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      st.executeUpdate();
    }
  }

  static By row(String id) {
    return By.cssSelector("tr[data-id='" + id + "']");
  }

  static long badge(WebDriver d) {
    String count = d.findElement(By.id("attention-badge")).getAttribute("data-count");
    return count == null || count.isEmpty() ? -1 : Long.parseLong(count);
  }

  static String text(WebDriver d, By by) {
    return d.findElement(by).getText();
  }

  /** An element's text with its line breaks as spaces (a definition list's term and value, side by side or not). */
  static String flat(By by) {
    return text(driver, by).replaceAll("\\s+", " ");
  }

  static long scrollWidth() {
    return ((Number) js("return document.documentElement.scrollWidth")).longValue();
  }

  static Object js(String script) {
    return ((JavascriptExecutor) driver).executeScript(script);
  }

  static WebElement waitFor(By by) {
    return chrome.awaitPresent(by, WAIT);
  }

  static WebDriverWait wait(Duration d) {
    return chrome.await(d);
  }
}
