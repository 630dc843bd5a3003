package dev.ledgerpost.operate.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Sending quotas per user end to end (docs/design.md §8.9 "Quotas"): two gateways on one ledger share one hourly count
 * (exactly the limit accepted, the rest refused with the quota reply), the approaching and exceeded events once each on
 * the hub's outbox and the webhooks, the window rolled over with a moved clock; recipients-per-message and size quotas
 * per user, the defaults for a user without an entry, and the send API's 429 / 422 / 413.
 */
class QuotaTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  /** Frozen ten minutes into an hour: no window ends while a test runs, unless the test moves it. */
  static final MutableClock CLOCK = new MutableClock(Instant.now().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofMinutes(10)));
  static final String PASSWORD = "quota-test-password";
  static final String DAILY_KEY = "quota-test-daily-key";
  static final String SMALL_KEY = "quota-test-small-key";
  static final String TENANTS = String.join("\n",
      "defaults:",
      "  recipientsPerMessage: 3",
      "users:",
      "  shop:",
      "    messagesPerHour: 50",
      "  small:",
      "    recipientsPerMessage: 2",
      "    messageSize: 2KB",
      "  daily:",
      "    messagesPerDay: 3",
      "");
  static WebhookReceiver webhooks;
  static String usersFile;
  static String tenantsFile;
  static String keysFile;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .configure((g, o) -> {
        usersFile = Credentials.htpasswd(Map.of("shop", PASSWORD, "small", PASSWORD, "nobody", PASSWORD)).toString();
        tenantsFile = Credentials.write("tenants-", "tenants.yaml", TENANTS).toString();
        keysFile = SendClient.keysFile(Map.of(DAILY_KEY, "daily:1000", SMALL_KEY, "small:1000")).toString();
        webhooks = g.closeAfter(GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(200))));
        common(o);
        o.put("node.id", "first");
        o.put("webhooks.endpoints", List.of(Map.of("name", "ops", "url", webhooks.url("/hook"),
            "secret", WebhookDeliveryTest.secret(5), "events", List.of("quota.approaching", "quota.exceeded"))));
      })
      .clock(CLOCK);

  static void common(Map<String, Object> o) {
    o.put("auth.usersFile", usersFile);
    o.put("smtp.allowInsecureAuth", true);
    o.put("api.keysFile", keysFile);
    o.put("tenants.file", tenantsFile);
    o.put("tenants.refreshInterval", "100ms");
    o.put("node.heartbeatInterval", "200ms");
    o.put("notify.pollInterval", "100ms");
    o.put("webhooks.pollInterval", "100ms");
  }

  @Test
  void twoGatewaysOnOneLedgerAcceptExactlyTheHourlyQuotaAndTheWindowRollsOver() throws Exception {
    Vertx other = Vertx.vertx(); // a bus of its own: the nodes meet only in PostgreSQL
    ExecutorService clients = Executors.newFixedThreadPool(2);
    try {
      Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
      common(o);
      o.put("ledger.url", gateway.databaseUrl());
      o.put("node.id", "second");
      try (GatewayHarness second = GatewayHarness.start(other, o, CLOCK);
           WsTestClient hub = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
        assertThat(hub.next(WAIT).getString("type")).isEqualTo("hello");
        int before = gateway.downstream().messages().size();
        Future<List<String>> first = clients.submit(sendAll(gateway.smtpPort(), 30));
        Future<List<String>> next = clients.submit(sendAll(second.smtpPort(), 30));
        List<String> replies = new ArrayList<>(first.get());
        replies.addAll(next.get());

        assertThat(replies).hasSize(60);
        assertThat(replies.stream().filter(r -> r.startsWith("250"))).hasSize(50);
        Instant reset = CLOCK.instant().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofHours(1));
        assertThat(replies.stream().filter(r -> !r.startsWith("250")))
            .hasSize(10)
            .allMatch(r -> r.equals("451 4.7.1 Quota messagesPerHour of 50 used up for shop; resets at " + reset
                + ", try again then"), "the quota reply");
        assertThat(gateway.downstream().messages().size() - before).isEqualTo(50);
        assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE auth_user = 'shop'"))
            .isEqualTo(50);

        // Once each, written by the statement that counted, whichever node it ran on.
        assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM outbox WHERE type = 'quota.approaching' AND payload->>'user' = 'shop'"))
            .isEqualTo(1);
        assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM outbox WHERE type = 'quota.exceeded' AND payload->>'user' = 'shop'"))
            .isEqualTo(1);
        assertThat(LedgerRows.string(gateway.databaseUrl(),
            "SELECT payload->>'used' FROM outbox WHERE type = 'quota.approaching' AND payload->>'user' = 'shop'")).isEqualTo("40"); // 0.8 x 50
        // On the hub (an admin subscriber sees them) ...
        List<String> onHub = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (onHub.size() < 2 && System.nanoTime() < deadline) {
          JsonObject e = hub.nextEvent(WAIT);
          if ("event".equals(e.getString("type")) && e.getString("event").startsWith("quota.")) {
            assertThat(e.getJsonObject("data").getString("user")).isEqualTo("shop");
            onHub.add(e.getString("event"));
          }
        }
        assertThat(onHub).containsExactlyInAnyOrder("quota.approaching", "quota.exceeded");
        // ... and at the webhook endpoint.
        Poll.until(WAIT, "both events reach the webhook endpoint", () -> shops(webhooks.requests()).size() >= 2);
        assertThat(shops(webhooks.requests()).stream().map(r -> new JsonObject(r.body()).getString("type")))
            .containsExactlyInAnyOrder("quota.approaching", "quota.exceeded");

        JsonObject usage = new JsonObject(gateway.get("/api/v1/tenants/shop").body());
        JsonObject hour = usage.getJsonObject("quotas").getJsonObject("messagesPerHour");
        assertThat(hour.getLong("limit")).isEqualTo(50);
        assertThat(hour.getLong("used")).isEqualTo(50);
        // Only the open's own refusals are counted in the ledger; those at MAIL, by a node's copy, cost no statement.
        assertThat(hour.getLong("refused")).isBetween(0L, 10L);
        assertThat(hour.getString("resetsAt")).isEqualTo(reset.toString());
        assertThat(usage.getBoolean("limited")).isTrue();
        JsonArray all = new JsonObject(gateway.get("/api/v1/tenants").body()).getJsonArray("users");
        assertThat(all.stream().map(JsonObject.class::cast).filter(u -> u.getString("user").equals("shop"))
            .allMatch(u -> u.getBoolean("limited"))).isTrue();

        // An operator raises the quota (file + SIGHUP on each node): it applies at once, on both, without a refresh.
        java.nio.file.Files.writeString(java.nio.file.Path.of(tenantsFile), TENANTS.replace("messagesPerHour: 50",
            "messagesPerHour: 52"));
        assertThat(gateway.gateway().reloadCredentials()).isZero();
        assertThat(second.gateway().reloadCredentials()).isZero();
        for (int port : new int[] {second.smtpPort(), gateway.smtpPort()}) {
          try (SmtpTestClient c = authenticated(port, "shop")) {
            assertThat(mail(c, "shop@example.com", List.of("bob@example.net"), "Subject: raised\r\n\r\nbody"))
                .startsWith("250");
          }
        }
        try (SmtpTestClient c = authenticated(second.smtpPort(), "shop")) {
          // At MAIL if this node's copy was refreshed since, else at the final dot by the open's own count.
          assertThat(one(c, 53)).startsWith("451 4.7.1 Quota messagesPerHour of 52 used up");
        }
        java.nio.file.Files.writeString(java.nio.file.Path.of(tenantsFile), TENANTS);
        assertThat(gateway.gateway().reloadCredentials()).isZero();
        assertThat(second.gateway().reloadCredentials()).isZero();

        // The next hour: a fresh window on both nodes, by the gateway's clock.
        CLOCK.advance(Duration.ofHours(1));
        try (SmtpTestClient c = authenticated(second.smtpPort(), "shop")) {
          assertThat(mail(c, "shop@example.com", List.of("bob@example.net"), "Subject: next hour\r\n\r\nbody"))
              .startsWith("250");
        }
        JsonObject after = new JsonObject(gateway.get("/api/v1/tenants/shop").body());
        assertThat(after.getJsonObject("quotas").getJsonObject("messagesPerHour").getLong("used")).isEqualTo(1);
        assertThat(after.getBoolean("limited")).isFalse();
      }
    } finally {
      clients.shutdownNow();
      GatewayHarness.await(other.close());
    }
  }

  @Test
  void recipientsAndSizeQuotasPerUserAndTheDefaultsForAUserWithoutAnEntry() throws Exception {
    try (SmtpTestClient c = authenticated(gateway.smtpPort(), "small")) {
      assertThat(c.command("MAIL FROM:<small@example.com> SIZE=3000"))
          .isEqualTo("552 5.3.4 Message size exceeds quota messageSize of 2048 octets for small");
      assertThat(c.command("MAIL FROM:<small@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<a@example.net>")).startsWith("250");
      assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
      assertThat(c.command("RCPT TO:<c@example.net>")).isEqualTo("452 4.5.3 Too many recipients: quota "
          + "recipientsPerMessage of 2 for small; send the rest in a new transaction");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: big\r\n\r\n" + (("x".repeat(70) + "\r\n").repeat(45)) + ".\r\n");
      assertThat(c.reply()).isEqualTo("552 5.3.4 Message size exceeds quota messageSize of 2048 octets for small");
      assertThat(mail(c, "small@example.com", List.of("a@example.net", "b@example.net"), "Subject: small\r\n\r\nok"))
          .startsWith("250");
    }
    try (SmtpTestClient c = authenticated(gateway.smtpPort(), "nobody")) { // no entry: the defaults' 3 recipients
      assertThat(c.command("MAIL FROM:<nobody@example.com>")).startsWith("250");
      for (String r : List.of("a", "b", "c")) {
        assertThat(c.command("RCPT TO:<" + r + "@example.net>")).startsWith("250");
      }
      assertThat(c.command("RCPT TO:<d@example.net>")).startsWith("452 4.5.3 Too many recipients: quota "
          + "recipientsPerMessage of 3 for nobody");
    }

    HttpResponse<String> many = gateway.sendClient().send(SMALL_KEY, null, message("a@example.net", "b@example.net",
        "c@example.net"));
    assertThat(many.statusCode()).as(many.body()).isEqualTo(422);
    assertThat(new JsonObject(many.body()).getString("quota")).isEqualTo("recipientsPerMessage");
    HttpResponse<String> big = gateway.sendClient().send(SMALL_KEY, null, message("a@example.net")
        .put("text", "y".repeat(3000)));
    assertThat(big.statusCode()).as(big.body()).isEqualTo(413);
    assertThat(new JsonObject(big.body()).getString("quota")).isEqualTo("messageSize");
  }

  @Test
  void theSendApiHears429WithRetryAfterAndTheQuotaOnceTheDayIsUsedUp() throws Exception {
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> ok = gateway.sendClient().send(DAILY_KEY, "daily-" + i, message("bob@example.net"));
      assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    }
    // With a key (the keyed open counts too) and without: refused by the open's count or by the node's copy alike.
    for (String key : new String[] {"daily-3", null}) {
      HttpResponse<String> refused = gateway.sendClient().send(DAILY_KEY, key, message("bob@example.net"));
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
      JsonObject problem = new JsonObject(refused.body());
      assertThat(problem.getString("quota")).isEqualTo("messagesPerDay");
      assertThat(problem.getLong("limit")).isEqualTo(3);
      Instant reset = CLOCK.instant().truncatedTo(ChronoUnit.DAYS).plus(Duration.ofDays(1));
      assertThat(problem.getString("resetsAt")).isEqualTo(reset.toString());
      assertThat(refused.headers().firstValue("Retry-After")).isPresent();
    }
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE auth_user = 'daily'"))
        .isEqualTo(3);
    HttpResponse<String> own = gateway.sendClient().get("/api/v1/tenants/daily", DAILY_KEY);
    assertThat(own.statusCode()).as(own.body()).isEqualTo(200);
    assertThat(new JsonObject(own.body()).getJsonObject("quotas").getJsonObject("messagesPerDay").getLong("used"))
        .isEqualTo(3);
    assertThat(gateway.sendClient().get("/api/v1/tenants/shop", DAILY_KEY).statusCode()).isEqualTo(403);
    assertThat(gateway.sendClient().get("/api/v1/tenants", DAILY_KEY).statusCode()).isEqualTo(403);
  }

  /** The webhook deliveries of shop's quota events (each delivery once: its first attempt). */
  private static List<WebhookReceiver.Request> shops(List<WebhookReceiver.Request> all) {
    return all.stream().filter(r -> r.nthOfId() == 1
        && "shop".equals(new JsonObject(r.body()).getJsonObject("data").getString("user"))).toList();
  }

  /** Sends {@code n} messages as shop over one connection; each one's last reply (MAIL's when it was refused there). */
  private static Callable<List<String>> sendAll(int port, int n) {
    return () -> {
      List<String> out = new ArrayList<>();
      try (SmtpTestClient c = authenticated(port, "shop")) {
        for (int i = 0; i < n; i++) {
          out.add(one(c, i));
        }
      }
      return out;
    };
  }

  /** One message as shop: the last reply it got (MAIL's when it was refused there, else the final dot's). */
  private static String one(SmtpTestClient c, int i) throws Exception {
    String mail = c.command("MAIL FROM:<shop@example.com>");
    if (!mail.startsWith("250")) {
      return mail;
    }
    assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
    assertThat(c.command("DATA")).startsWith("354");
    c.send("Subject: quota " + i + "\r\n\r\nbody\r\n.\r\n");
    return c.reply();
  }

  /** MAIL, RCPT..., DATA and the body on an authenticated session (a second EHLO would start it over); the dot's reply. */
  static String mail(SmtpTestClient c, String from, List<String> to, String body) throws Exception {
    assertThat(c.command("MAIL FROM:<" + from + ">")).startsWith("250");
    for (String t : to) {
      assertThat(c.command("RCPT TO:<" + t + ">")).startsWith("250");
    }
    assertThat(c.command("DATA")).startsWith("354");
    c.send(body + "\r\n.\r\n");
    return c.reply();
  }

  static SmtpTestClient authenticated(int port, String user) throws Exception {
    SmtpTestClient c = new SmtpTestClient(port);
    c.reply();
    assertThat(c.command("EHLO client.test")).startsWith("250");
    String plain = Base64.getEncoder().encodeToString(("\0" + user + "\0" + PASSWORD).getBytes(StandardCharsets.UTF_8));
    assertThat(c.command("AUTH PLAIN " + plain)).startsWith("235");
    return c;
  }

  private static JsonObject message(String... to) {
    JsonArray rcpts = new JsonArray();
    for (String t : to) {
      rcpts.add(t);
    }
    return new JsonObject().put("from", "app@example.com").put("to", rcpts).put("subject", "quota").put("text", "hello");
  }
}
