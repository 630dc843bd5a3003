package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Refused recipients recorded (docs/design.md §8.8, data-model.md §5.23) and the suppression list fed by the smarthost's
 * 5.1.x refusals at the default threshold (1 within 24h): a suppressed recipient, the smarthost's RCPT and DATA
 * refusals, the API's scoping, retention by the gateway's clock and erasure.
 */
class RefusalsTest {
  static final String CAROL_KEY = "refusals-test-carol";
  static final String DAVE_KEY = "refusals-test-dave";
  static final Duration WAIT = Duration.ofSeconds(20);
  static final MutableClock CLOCK = new MutableClock(Instant.now());

  /** A smarthost that refuses every mailbox of bad.example (550 5.1.1), defers full.example's, and a marked body at DATA. */
  static final class Smarthost implements ScriptedSmtpServer.Script {
    @Override
    public String rcpt(String to) {
      if (to.toLowerCase(java.util.Locale.ROOT).endsWith("@bad.example")) { // a domain's case does not matter
        return "550 5.1.1 <" + to + ">: Recipient address rejected: User unknown";
      }
      return to.endsWith("@full.example") ? "452 4.2.2 Mailbox full" : "250 2.1.5 Recipient ok";
    }

    @Override
    public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
      return Future.succeededFuture(message.text().contains("X-Refuse: yes") ? "554 5.7.1 Message refused by policy"
          : "250 2.0.0 Ok: queued as DS" + n);
    }
  }

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(CAROL_KEY, "carol:1000", DAVE_KEY, "dave:1000")).toString())
      .with("auth.usersFile", Credentials.htpasswd(Map.of("carol", "c4rol", "dave", "d4ve")).toString())
      .with("smtp.allowInsecureAuth", true)
      .with("suppression.refreshInterval", "200ms")
      .with("suppression.refusalRetention", "2h")
      .with("notify.pruneInterval", "1s")
      .script(g -> new Smarthost())
      .clock(CLOCK);

  @Test
  void aSuppressedRecipientsRefusalIsRecordedWithItsEntryAndNoDataFollows() throws Exception {
    JsonObject entry = add("listed@example.org", "global", "asked to stop");
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<listed@example.org>"), "550 5.1.1 <listed@example.org> suppressed since");
      expect(c.command("QUIT"), "221");
    }
    JsonObject refusal = onlyRefusal("listed@example.org", null);
    assertThat(refusal.getString("source")).isEqualTo("suppressed");
    assertThat(refusal.getString("door")).isEqualTo("smtp");
    assertThat(refusal.getString("stage")).isEqualTo("RCPT");
    assertThat(refusal.getString("suppression")).isEqualTo(entry.getString("id"));
    assertThat(refusal.getString("sender")).isEqualTo("app@example.com");
    assertThat(refusal.getString("client")).isEqualTo("127.0.0.1");
    assertThat(refusal.getInteger("code")).isEqualTo(550);
    assertThat(refusal.getString("reply")).startsWith("550 5.1.1 <listed@example.org> suppressed since");
    assertThat(refusal.getValue("messageId")).isNull();
    assertThat(gateway.downstream().commands()).noneMatch(cmd -> cmd.contains("listed@example.org"));
    assertThat(metric("ledgerpost_recipient_refusals_total{source=\"suppressed\"}")).isGreaterThanOrEqualTo(1.0);
  }

  @Test
  void theSendApisSuppressedRecipientsAreRecordedAsRefusalsOfTheHttpDoor() throws Exception {
    JsonObject entry = add("api-listed@example.org", "global", "asked to stop, by mail");
    double before = metric("ledgerpost_recipient_refusals_total{source=\"suppressed\"}");
    JsonObject send = new JsonObject().put("from", "app@example.com")
        .put("to", new JsonArray().add("api-listed@example.org").add("api-kept@example.org")).put("subject", "s").put("text", "b\n");
    HttpResponse<String> refused = gateway.sendClient().send(CAROL_KEY, null, send);
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
    JsonObject refusal = onlyRefusal("api-listed@example.org", null);
    assertThat(refusal.getString("door")).isEqualTo("http");
    assertThat(refusal.getString("source")).isEqualTo("suppressed");
    assertThat(refusal.getString("stage")).isEqualTo("RCPT");
    assertThat(refusal.getString("user")).isEqualTo("carol");
    assertThat(refusal.getString("client")).isEqualTo("127.0.0.1");
    assertThat(refusal.getString("sender")).isEqualTo("app@example.com");
    assertThat(refusal.getString("suppression")).isEqualTo(entry.getString("id"));
    assertThat(refusal.getInteger("code")).isEqualTo(422);
    assertThat(refusal.getString("reply")).startsWith("422 <api-listed@example.org> suppressed since ")
        .endsWith(": asked to stop, by mail");
    assertThat(refusals("?recipient=api-kept%40example.org", gateway.gateway().adminToken())).as("the other recipient").isEmpty();

    // allowPartial: the message goes to the rest, and the recipient left out is recorded again, with no DATA for it.
    HttpResponse<String> partial = gateway.sendClient().send(CAROL_KEY, null, send.copy().put("allowPartial", true));
    assertThat(partial.statusCode()).as(partial.body()).isEqualTo(200);
    Poll.until(WAIT, "the second refusal", () -> refusals("?recipient=api-listed%40example.org", CAROL_KEY).size() == 2);
    assertThat(refusals("?recipient=api-listed%40example.org", CAROL_KEY)).allSatisfy(r -> assertThat(((JsonObject) r)
        .getString("door")).isEqualTo("http"));
    assertThat(metric("ledgerpost_recipient_refusals_total{source=\"suppressed\"}")).isGreaterThanOrEqualTo(before + 2);
    assertThat(gateway.downstream().commands()).noneMatch(cmd -> cmd.contains("api-listed@example.org"));
    // An SMTP session's refusal says its door.
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<api-listed@example.org>"), "550 5.1.1");
    }
    Poll.until(WAIT, "the SMTP refusal", () -> refusals("?recipient=api-listed%40example.org", gateway.gateway().adminToken()).size() == 3);
    assertThat(refusals("?recipient=api-listed%40example.org", gateway.gateway().adminToken()).stream()
        .map(r -> ((JsonObject) r).getString("door"))).containsExactlyInAnyOrder("http", "http", "smtp");
  }

  @Test
  void aSmarthostRefusalAtRcptIsRecordedAndItsAddressIsSuppressedNamingIt() throws Exception {
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<Nobody@Bad.Example>"), "550 5.1.1");
      expect(c.command("RCPT TO:<busy@full.example>"), "452 4.2.2");
      expect(c.command("QUIT"), "221");
    }
    JsonObject refusal = onlyRefusal("Nobody@bad.example", null);
    assertThat(refusal.getString("source")).isEqualTo("smarthost");
    assertThat(refusal.getString("status")).isEqualTo("5.1.1");
    assertThat(refusal.getString("reply")).contains("User unknown");
    JsonObject deferred = onlyRefusal("busy@full.example", null);
    assertThat(deferred.getInteger("code")).isEqualTo(452);

    // Threshold 1: the first 5.1.x refusal puts the address on the global list, naming the refusal.
    Poll.until(WAIT, "the refusal adds a suppression entry", () -> !entries("Nobody@bad.example").isEmpty());
    JsonObject entry = entries("Nobody@bad.example").getJsonObject(0);
    assertThat(entry.getString("scope")).isEqualTo("global");
    assertThat(entry.getString("source")).isEqualTo("refusal");
    assertThat(entry.getString("category")).isEqualTo("invalid_recipient");
    assertThat(entry.getString("reply")).contains("User unknown");
    assertThat(entry.getString("reason")).contains("refusal " + refusal.getString("id"));
    int rcptsBefore = rcptsFor("Nobody@Bad.Example");
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      assertThat(c.command("RCPT TO:<Nobody@Bad.Example>")).startsWith("550 5.1.1 <Nobody@Bad.Example> suppressed since")
          .contains("refused by the smarthost 1 time within 24h (refusal " + refusal.getString("id") + ")");
    }
    assertThat(rcptsFor("Nobody@Bad.Example")).as("the smarthost is not asked again").isEqualTo(rcptsBefore);
    assertThat(entries("busy@full.example")).as("a 4.x.x refusal feeds nothing").isEmpty();
  }

  @Test
  void aSmarthostRefusalAtDataIsRecordedForEveryAcceptedRecipient() throws Exception {
    try (SmtpTestClient c = client()) {
      assertThat(c.sendMail("app@example.com", List.of("one@data.example", "two@data.example"),
          "X-Refuse: yes\r\nSubject: s\r\n\r\nbody")).startsWith("554 5.7.1");
    }
    JsonObject one = onlyRefusal("one@data.example", null);
    JsonObject two = onlyRefusal("two@data.example", null);
    assertThat(one.getString("stage")).isEqualTo("DATA");
    assertThat(one.getString("messageId")).isNotNull().isEqualTo(two.getString("messageId"));
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT status FROM messages WHERE id = '" + one.getString("messageId") + "'"))
        .isEqualTo("FAILED_PERM");
    assertThat(entries("one@data.example")).as("5.7.1 is not a bad mailbox").isEmpty();
  }

  @Test
  void aUsersRefusalsAreItsOwnInTheApiAndTheListScope() throws Exception {
    try (SmtpTestClient c = client()) {
      expect(c.command(auth("carol", "c4rol")), "235");
      expect(c.command("MAIL FROM:<carol@example.com>"), "250");
      expect(c.command("RCPT TO:<ghost@bad.example>"), "550 5.1.1");
    }
    JsonObject refusal = onlyRefusal("ghost@bad.example", null);
    assertThat(refusal.getString("user")).isEqualTo("carol");
    Poll.until(WAIT, "carol's entry is added", () -> !entries("ghost@bad.example").isEmpty());
    assertThat(entries("ghost@bad.example").getJsonObject(0).getString("scope")).isEqualTo("user:carol");

    JsonArray mine = refusals("?recipient=ghost%40bad.example", CAROL_KEY);
    assertThat(mine).hasSize(1);
    assertThat(refusals("?recipient=ghost%40bad.example", DAVE_KEY)).as("dave sees only his own").isEmpty();
    assertThat(gateway.get("/api/v1/refusals?user=carol", DAVE_KEY).statusCode()).isEqualTo(403);
    assertThat(gateway.get("/api/v1/refusals", null).statusCode()).isEqualTo(401);
    assertThat(refusals("?user=carol&recipient=ghost%40bad.example", gateway.gateway().adminToken())).hasSize(1);
    // dave's mail to the same address is not refused by carol's entry: the smarthost is asked, and refuses it again.
    try (SmtpTestClient c = client()) {
      expect(c.command(auth("dave", "d4ve")), "235");
      expect(c.command("MAIL FROM:<dave@example.com>"), "250");
      expect(c.command("RCPT TO:<ghost@bad.example>"), "550 5.1.1 <ghost@bad.example>: Recipient address rejected");
    }
  }

  @Test
  void retentionDeletesRefusalsPastItByTheGatewaysClock() throws Exception {
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<old@full.example>"), "452");
    }
    onlyRefusal("old@full.example", null);
    CLOCK.advance(Duration.ofHours(3)); // suppression.refusalRetention is 2h
    Poll.until(WAIT, "the retention job deletes the refusal", () ->
        LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM recipient_refusals WHERE recipient = 'old@full.example'") == 0);
  }

  @Test
  void erasureHashesTheAddressInItsRefusals() throws Exception {
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<erase.me@full.example>"), "452");
    }
    onlyRefusal("erase.me@full.example", null);
    HttpResponse<String> r = gateway.post("/api/v1/erasures", new JsonObject().put("address", "erase.me@full.example").encode(),
        "X-Operator", "dpo");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(new JsonObject(r.body()).getJsonObject("rows").getLong("recipient_refusals")).isEqualTo(1L);
    assertThat(LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM recipient_refusals WHERE recipient ILIKE '%erase.me%' OR reply ILIKE '%erase.me%'")).isZero();
    assertThat(refusals("?recipient=erase.me%40full.example", gateway.gateway().adminToken())).isEmpty();
  }

  // ---

  /** The one refusal of {@code recipient}, once it is written (off the session's event loop: polled). */
  static JsonObject onlyRefusal(String recipient, String token) throws Exception {
    String query = "?recipient=" + java.net.URLEncoder.encode(recipient, StandardCharsets.UTF_8);
    String as = token == null ? gateway.gateway().adminToken() : token;
    Poll.until(WAIT, "the refusal of " + recipient + " is recorded", () -> !refusals(query, as).isEmpty());
    JsonArray found = refusals(query, as);
    assertThat(found).hasSize(1);
    return found.getJsonObject(0);
  }

  static JsonArray refusals(String query, String token) throws Exception {
    HttpResponse<String> r = gateway.get("/api/v1/refusals" + query, token);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getJsonArray("refusals");
  }

  static JsonArray entries(String address) throws Exception {
    HttpResponse<String> r = gateway.get("/api/v1/suppressions?address=" + java.net.URLEncoder.encode(address, StandardCharsets.UTF_8));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getJsonArray("entries");
  }

  private static int rcptsFor(String address) {
    return (int) gateway.downstream().commands().stream().filter(cmd -> cmd.contains("RCPT") && cmd.contains(address)).count();
  }

  static JsonObject add(String address, String scope, String reason) throws Exception {
    JsonObject body = new JsonObject().put("address", address).put("scope", scope).put("reason", reason);
    HttpResponse<String> r = gateway.post("/api/v1/suppressions", body.encode(), "X-Operator", "ops");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return new JsonObject(r.body());
  }

  static String auth(String user, String password) {
    return "AUTH PLAIN " + Base64.getEncoder().encodeToString(("\0" + user + "\0" + password).getBytes(StandardCharsets.UTF_8));
  }

  static SmtpTestClient client() throws Exception {
    return client(gateway);
  }

  static SmtpTestClient client(GatewayHarness on) throws Exception {
    SmtpTestClient c = new SmtpTestClient(on.smtpPort());
    c.reply();
    expect(c.command("EHLO client.test"), "250");
    return c;
  }

  static void expect(String reply, String prefix) {
    assertThat(reply).startsWith(prefix);
  }

  static double metric(String series) throws Exception {
    for (String line : gateway.get("/metrics", null).body().split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    throw new AssertionError("no series " + series);
  }
}
