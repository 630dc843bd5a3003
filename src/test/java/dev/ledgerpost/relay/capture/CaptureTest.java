package dev.ledgerpost.relay.capture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Capture mode end to end (docs/design.md §8.10): a captured SMTP user's mail never reaches the smarthost (no
 * connection at all), is CAPTURED with its events, readable raw (byte for byte) and parsed through the API by its own
 * user's key and the admin token only, and gone after capture.retention by the gateway's (moved) clock; a capturing
 * send key over HTTP; a user who is not captured is relayed as before; the size bound; erasure takes the bytes.
 */
class CaptureTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  static final MutableClock CLOCK = new MutableClock(Instant.now());
  /** The captured SMTP user's own send key (its user is captured by the tenants file). */
  static final String TESTER_KEY = "capture-test-tester";
  /** A key marked `capture` in the keys file, of a user the tenants file does not capture. */
  static final String CAPTURING_KEY = "capture-test-capturing";
  /** A plain key of the same user as the capturing one: relayed. */
  static final String PLAIN_KEY = "capture-test-plain";
  static final String PASSWORD = "s3cret-capture";
  static final long MAX = 16 * 1024;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("auth.usersFile", Credentials.htpasswd(Map.of("tester", PASSWORD, "sender", PASSWORD)).toString())
      .with("smtp.allowInsecureAuth", true)
      .with("tenants.file", Credentials.write("tenants-", "tenants.yaml", """
          users:
            tester:
              capture: true
          """).toString())
      .with("api.keysFile", Credentials.write("keys-", "api-keys", "tester:" + SendClient.sha256(TESTER_KEY) + ":1000\n"
          + "app:" + SendClient.sha256(CAPTURING_KEY) + ":1000:capture\n"
          + "app:" + SendClient.sha256(PLAIN_KEY) + ":1000\n").toString())
      .with("capture.maxMessageSize", String.valueOf(MAX))
      .with("capture.retention", "7d")
      .with("node.heartbeatInterval", "200ms")
      .with("notify.pruneInterval", "1s")
      .clock(CLOCK);

  private final HttpClient http = HttpClient.newHttpClient();

  /** A message with a text part, an HTML part (with a script), an attachment, and a line that starts with a dot. */
  static String message(String subject) {
    return "From: Tester <tester@example.com>\r\n"
        + "To: Bob <bob@example.net>\r\n"
        + "Subject: =?UTF-8?B?" + Base64.getEncoder().encodeToString(subject.getBytes(StandardCharsets.UTF_8)) + "?=\r\n"
        + "MIME-Version: 1.0\r\n"
        + "Content-Type: multipart/mixed; boundary=\"outer\"\r\n"
        + "\r\n"
        + "--outer\r\n"
        + "Content-Type: multipart/alternative; boundary=alt\r\n"
        + "\r\n"
        + "--alt\r\n"
        + "Content-Type: text/plain; charset=utf-8\r\n"
        + "Content-Transfer-Encoding: quoted-printable\r\n"
        + "\r\n"
        + "Gr=C3=BC=C3=9Fe, plain text.\r\n"
        + ".a line that starts with a dot\r\n"
        + "--alt\r\n"
        + "Content-Type: text/html; charset=utf-8\r\n"
        + "\r\n"
        + "<p id=\"greeting\">Hello from <b>HTML</b></p><p id=\"probe\">static</p>"
        + "<script>document.getElementById('probe').textContent = 'script ran';</script>"
        + "<img id=\"remote\" src=\"http://127.0.0.1:9/pixel.gif\">\r\n"
        + "--alt--\r\n"
        + "--outer\r\n"
        + "Content-Type: application/pdf; name=\"invoice.pdf\"\r\n"
        + "Content-Disposition: attachment; filename=\"invoice.pdf\"\r\n"
        + "Content-Transfer-Encoding: base64\r\n"
        + "\r\n"
        + Base64.getMimeEncoder().encodeToString(new byte[300]) + "\r\n"
        + "--outer--\r\n";
  }

  @Test
  void aCapturedUsersMailNeverReachesTheSmarthostAndIsReadableByItsOwnKeyAndTheAdminOnly() throws Exception {
    int connections = gateway.downstream().connections();
    int commands = gateway.downstream().commands().size();
    int received = gateway.downstream().messages().size();
    String text = message("Grüße aus dem Test");
    String reply;
    try (SmtpTestClient c = authenticated("tester")) {
      expect(c.command("MAIL FROM:<tester@example.com>"), "250");
      expect(c.command("RCPT TO:<bob@example.net>"), "250");
      expect(c.command("RCPT TO:<carol@example.org>"), "250");
      expect(c.command("DATA"), "354");
      c.sendBytes(SmtpTestClient.dotStuffed(text.getBytes(StandardCharsets.UTF_8)));
      c.send(".\r\n");
      reply = c.reply();
    }
    assertThat(reply).startsWith("250 2.0.0 Ok: captured as ").endsWith("(not relayed)");
    UUID id = idOf(reply);
    assertThat(gateway.downstream().connections()).as("the smarthost saw no connection at all").isEqualTo(connections);
    assertThat(gateway.downstream().commands()).as("nor a command on a pooled one").hasSize(commands);
    assertThat(gateway.downstream().messages()).hasSize(received);

    String db = gateway.databaseUrl();
    assertThat(LedgerRows.status(db, id)).isEqualTo("CAPTURED");
    assertThat(LedgerRows.string(db, "SELECT route FROM messages WHERE id = '" + id + "'")).isEqualTo("capture");
    assertThat(LedgerRows.string(db, "SELECT auth_user FROM messages WHERE id = '" + id + "'")).isEqualTo("tester");
    assertThat(LedgerRows.count(db, "SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'CAPTURED'"))
        .isEqualTo(2);
    assertThat(metric("ledgerpost_delivery_outcomes_total{outcome=\"captured\"}")).isGreaterThanOrEqualTo(1.0);
    // The usual events: message.pending at the open, message.settled with the new status.
    Poll.until(WAIT, "both events are published", () -> LedgerRows.count(db,
        "SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND pub_seq IS NOT NULL") == 2);
    assertThat(LedgerRows.string(db, "SELECT payload->>'status' FROM outbox_events WHERE message_id = '" + id
        + "' AND type = 'message.settled'")).isEqualTo("CAPTURED");

    // Raw: byte for byte what the client meant (unstuffed), whoever may read it.
    HttpResponse<byte[]> raw = getBytes("/api/v1/captures/" + id + "/raw", gateway.gateway().adminToken());
    assertThat(raw.statusCode()).isEqualTo(200);
    assertThat(raw.headers().firstValue("Content-Type")).hasValue("message/rfc822");
    assertThat(raw.body()).isEqualTo(text.getBytes(StandardCharsets.UTF_8));
    assertThat(getBytes("/api/v1/captures/" + id + "/raw", TESTER_KEY).body()).isEqualTo(text.getBytes(StandardCharsets.UTF_8));

    // Parsed.
    HttpResponse<String> parsed = gateway.get("/api/v1/captures/" + id, TESTER_KEY);
    assertThat(parsed.statusCode()).as(parsed.body()).isEqualTo(200);
    JsonObject c = new JsonObject(parsed.body());
    assertThat(c.getString("id")).isEqualTo(id.toString());
    assertThat(c.getString("user")).isEqualTo("tester");
    assertThat(c.getString("subject")).isEqualTo("Grüße aus dem Test");
    assertThat(c.getString("from")).isEqualTo("Tester <tester@example.com>");
    assertThat(c.getJsonArray("headers").stream().map(h -> ((JsonObject) h).getString("name")).toList())
        .containsExactly("From", "To", "Subject", "MIME-Version", "Content-Type");
    assertThat(c.getString("text")).isEqualTo("Grüße, plain text.\r\n.a line that starts with a dot");
    assertThat(c.getString("html")).contains("<p id=\"greeting\">Hello from <b>HTML</b></p>");
    JsonArray attachments = c.getJsonArray("attachments");
    assertThat(attachments).hasSize(1);
    assertThat(attachments.getJsonObject(0).getMap())
        .containsEntry("name", "invoice.pdf").containsEntry("type", "application/pdf").containsEntry("size", 300);
    assertThat(c.getLong("size")).isEqualTo(text.getBytes(StandardCharsets.UTF_8).length);

    // The HTML part alone, under a policy that lets it load and run nothing.
    HttpResponse<String> html = gateway.get("/api/v1/captures/" + id + "/html", TESTER_KEY);
    assertThat(html.statusCode()).isEqualTo(200);
    assertThat(html.headers().firstValue("Content-Security-Policy"))
        .hasValue("default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox");
    assertThat(html.body()).startsWith("<p id=\"greeting\">");

    // Another user's key, an unknown id: 404 alike; no token: 401.
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id, PLAIN_KEY), 404);
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id + "/raw", PLAIN_KEY), 404);
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + UUID.randomUUID(), TESTER_KEY), 404);
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id, "no-such-token"), 401);
  }

  @Test
  void aUserWhoIsNotCapturedIsRelayedAsBefore() throws Exception {
    int received = gateway.downstream().messages().size();
    String reply;
    try (SmtpTestClient c = authenticated("sender")) {
      expect(c.command("MAIL FROM:<sender@example.com>"), "250");
      expect(c.command("RCPT TO:<bob@example.net>"), "250");
      expect(c.command("DATA"), "354");
      c.send("Subject: relayed\r\n\r\nbody\r\n.\r\n");
      reply = c.reply();
    }
    assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
    UUID id = idOf(reply);
    assertThat(gateway.downstream().messages()).hasSize(received + 1);
    assertThat(LedgerRows.status(gateway.databaseUrl(), id)).isEqualTo("SENT");
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id), 404);

    HttpResponse<String> sent = gateway.sendClient().send(PLAIN_KEY, null, send("plain key"));
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    assertThat(new JsonObject(sent.body()).getString("status")).isEqualTo("SENT");
    assertThat(gateway.downstream().messages()).hasSize(received + 2);
  }

  @Test
  void aCapturingKeyCapturesOverHttpAndTheBytesAreGoneAfterTheirRetention() throws Exception {
    int connections = gateway.downstream().connections();
    int commands = gateway.downstream().commands().size();
    HttpResponse<String> sent = gateway.sendClient().send(CAPTURING_KEY, UUID.randomUUID().toString(), send("over HTTP"));
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    JsonObject answer = new JsonObject(sent.body());
    assertThat(answer.getString("status")).isEqualTo("CAPTURED");
    UUID id = UUID.fromString(answer.getString("operationId"));
    assertThat(gateway.downstream().connections()).as("the smarthost saw no connection at all").isEqualTo(connections);
    assertThat(gateway.downstream().commands()).as("nor a command on a pooled one").hasSize(commands);
    String db = gateway.databaseUrl();
    assertThat(LedgerRows.status(db, id)).isEqualTo("CAPTURED");

    JsonObject c = new JsonObject(gateway.get("/api/v1/captures/" + id, CAPTURING_KEY).body());
    assertThat(c.getString("subject")).isEqualTo("over HTTP");
    assertThat(c.getString("text")).contains("sent over HTTP");
    assertThat(c.getString("user")).isEqualTo("app");
    // The same user's other key reads it too: captures are per user.
    assertThat(gateway.get("/api/v1/captures/" + id, PLAIN_KEY).statusCode()).isEqualTo(200);
    // A key that is not marked, of a user the tenants file captures: captured as well.
    HttpResponse<String> tenant = gateway.sendClient().send(TESTER_KEY, null, send("tenant over HTTP"));
    assertThat(new JsonObject(tenant.body()).getString("status")).as(tenant.body()).isEqualTo("CAPTURED");
    assertThat(gateway.downstream().commands()).hasSize(commands);

    CLOCK.advance(Duration.ofDays(7).plusMinutes(1));
    try {
      Poll.until(WAIT, "the CAPTURE_EXPIRY job deletes the bytes", () -> LedgerRows.count(db,
          "SELECT count(*) FROM captures WHERE message_id = '" + id + "'") == 0);
    } finally {
      CLOCK.advance(Duration.ofDays(-7).minusMinutes(1)); // the other tests' captures are kept from here on
    }
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id), 404);
    assertThat(LedgerRows.status(db, id)).as("the ledger row stays").isEqualTo("CAPTURED");
  }

  @Test
  void aMessageOverTheCaptureBoundIsRefusedAndNotRelayed() throws Exception {
    int connections = gateway.downstream().connections();
    String big = "Subject: big\r\n\r\n" + ("x".repeat(70) + "\r\n").repeat((int) (MAX / 72 + 10));
    String reply;
    try (SmtpTestClient c = authenticated("tester")) {
      reply = c.sendMail("tester@example.com", List.of("bob@example.net"), big);
    }
    assertThat(reply).startsWith("552 5.3.4 ").contains("capture.maxMessageSize");
    assertThat(gateway.downstream().connections()).isEqualTo(connections);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE auth_user = 'tester' "
        + "AND status = 'FAILED_PERM' AND downstream_reply LIKE '552 5.3.4 %'")).isEqualTo(1);
  }

  @Test
  void erasureTakesTheCapturedBytes() throws Exception {
    String reply;
    try (SmtpTestClient c = authenticated("tester")) {
      reply = c.sendMail("tester@example.com", List.of("erase.capture@example.net"), "Subject: to be erased\r\n\r\nbody");
    }
    UUID id = idOf(reply);
    String db = gateway.databaseUrl();
    assertThat(LedgerRows.count(db, "SELECT count(*) FROM captures WHERE message_id = '" + id + "'")).isEqualTo(1);
    HttpResponse<String> r = gateway.post("/api/v1/erasures",
        new JsonObject().put("address", "erase.capture@example.net").encode(), "X-Operator", "dpo");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(new JsonObject(r.body()).getJsonObject("rows").getLong("captures")).isEqualTo(1L);
    assertThat(LedgerRows.count(db, "SELECT count(*) FROM captures WHERE message_id = '" + id + "'")).isZero();
    SendClient.assertProblem(gateway.get("/api/v1/captures/" + id), 404);
    assertThat(LedgerRows.status(db, id)).isEqualTo("CAPTURED");
  }

  private static double metric(String series) throws Exception {
    for (String line : gateway.get("/metrics", null).body().split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    throw new AssertionError("no series " + series);
  }

  static JsonObject send(String subject) {
    return new JsonObject().put("from", "app@example.com").put("to", new JsonArray().add("bob@example.net"))
        .put("subject", subject).put("text", "sent " + subject);
  }

  private HttpResponse<byte[]> getBytes(String path, String token) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
        .header("Authorization", "Bearer " + token).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  static SmtpTestClient authenticated(String user) throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    c.reply();
    expect(c.command("EHLO client.test"), "250");
    String plain = Base64.getEncoder().encodeToString(("\0" + user + "\0" + PASSWORD).getBytes(StandardCharsets.UTF_8));
    expect(c.command("AUTH PLAIN " + plain), "235");
    return c;
  }

  static UUID idOf(String reply) {
    Matcher m = Pattern.compile("(?:captured|queued) as ([0-9a-f-]{36})").matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return UUID.fromString(m.group(1));
  }

  static void expect(String reply, String code) {
    assertThat(reply).startsWith(code);
  }
}
