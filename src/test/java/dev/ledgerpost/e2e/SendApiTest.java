package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import jakarta.mail.BodyPart;
import jakarta.mail.Message;
import jakarta.mail.Part;
import jakarta.mail.Session;
import jakarta.mail.internet.InternetAddress;
import jakarta.mail.internet.MimeMessage;
import jakarta.mail.internet.MimeMultipart;
import jakarta.mail.internet.MimeUtility;
import java.io.ByteArrayInputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * POST /api/v1/messages end to end: real sockets, a real downstream, real PostgreSQL. Composed and raw
 * sends arrive as they should; everything the API refuses is refused before anything is recorded or sent.
 */
class SendApiTest {
  static final String ALICE = "alice-secret-key";
  static final String BOB = "bob-secret-key";
  static final String SLOW = "slow-secret-key";
  static final long MAX_MESSAGE = 64 * 1024;

  static SendClient client;
  static final AtomicInteger mailCommands = new AtomicInteger();

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public String mail(String from) {
      mailCommands.incrementAndGet();
      return from.startsWith("deferred-sender") ? "451 4.7.1 Try again later" : "250 2.1.0 Sender ok";
    }

    @Override
    public String rcpt(String to) {
      if (to.startsWith("nobody@")) {
        return "550 5.1.1 No such user";
      }
      if (to.startsWith("busy@")) {
        return "450 4.2.1 Mailbox busy";
      }
      return "250 2.1.5 Recipient ok";
    }
  })
      .with("api.keysFile", SendClient.keysFile(Map.of(ALICE, "alice:1000", BOB, "bob:1000", SLOW, "slow:0.01")).toString())
      .with("smtp.maxMessageSize", MAX_MESSAGE + "")
      .afterStart(g -> client = g.sendClient());

  /** Issue 11: nothing the send API composes or relays reaches the smarthost with a bare CR or LF. */
  @AfterEach
  void theSmarthostSawNoBareCrOrLf() {
    assertThat(gateway.downstream().bareLineEndings()).isEmpty();
  }

  static JsonObject composed() {
    return new JsonObject()
        .put("from", "Alice Example <alice@example.com>")
        .put("to", new JsonArray().add("Bob <bob@example.net>"))
        .put("subject", "hello")
        .put("text", "Hello Bob.\n");
  }

  @Test
  void composedMessageArrivesAsMimeThatJakartaMailReadsBack() throws Exception {
    byte[] pdf = new byte[3000];
    for (int i = 0; i < pdf.length; i++) {
      pdf[i] = (byte) (i * 31);
    }
    String subject = "Grüße aus Köln ✓ — Übersicht für März";
    JsonObject body = new JsonObject()
        .put("from", "Alice Example <alice@example.com>")
        .put("to", new JsonArray().add("Bob <bob@example.net>"))
        .put("cc", new JsonArray().add("carol@example.net"))
        .put("bcc", new JsonArray().add("dave@example.net"))
        .put("subject", subject)
        .put("text", "Hallo Bob,\r\nhier ist der Bericht.\n.\n..zwei Punkte\nGrüße\n")
        .put("html", "<p>Hallo <b>Bob</b>, hier ist der Bericht. Grüße</p>")
        .put("headers", new JsonObject().put("X-Campaign", "spring-2026").put("X-Note", "für dich"))
        .put("attachments", new JsonArray().add(new JsonObject()
            .put("filename", "bericht.pdf").put("contentType", "application/pdf")
            .put("content", Base64.getEncoder().encodeToString(pdf))));
    int before = gateway.downstream().messages().size();

    HttpResponse<String> r = client.send(ALICE, null, body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonObject answer = new JsonObject(r.body());
    String op = answer.getString("operationId");
    assertThat(UUID.fromString(op)).isNotNull();
    assertThat(answer.getString("status")).isEqualTo("SENT");
    assertThat(answer.getString("messageId")).isEqualTo("<" + op + "@gateway.test>");
    assertThat(answer.getString("downstreamReply")).startsWith("250 2.0.0 Ok: queued as DS");
    assertThat(r.headers().firstValue("Location")).hasValue("/api/v1/operations/" + op);

    assertThat(gateway.downstream().messages()).hasSize(before + 1);
    ScriptedSmtpServer.Received got = gateway.downstream().messages().get(before);
    assertThat(got.mailFrom()).isEqualTo("alice@example.com");
    assertThat(got.recipients()).containsExactly("bob@example.net", "carol@example.net", "dave@example.net");
    assertThat(got.text()).startsWith("Received: from unknown ([127.0.0.1])").contains("with HTTP id " + op);

    MimeMessage m = new MimeMessage(Session.getInstance(new Properties()), new ByteArrayInputStream(got.data()));
    assertThat(m.getSubject()).isEqualTo(subject);
    assertThat(((InternetAddress) m.getFrom()[0]).getAddress()).isEqualTo("alice@example.com");
    assertThat(Arrays.stream(m.getRecipients(Message.RecipientType.TO)).map(a -> ((InternetAddress) a).getAddress()))
        .containsExactly("bob@example.net");
    assertThat(Arrays.stream(m.getRecipients(Message.RecipientType.CC)).map(a -> ((InternetAddress) a).getAddress()))
        .containsExactly("carol@example.net");
    assertThat(m.getHeader("Bcc")).isNull();
    assertThat(m.getMessageID()).isEqualTo("<" + op + "@gateway.test>");
    assertThat(m.getSentDate()).isNotNull();
    assertThat(m.getHeader("X-Campaign")).containsExactly("spring-2026");
    assertThat(MimeUtility.decodeText(m.getHeader("X-Note")[0])).isEqualTo("für dich");

    assertThat(m.isMimeType("multipart/mixed")).isTrue();
    MimeMultipart mixed = (MimeMultipart) m.getContent();
    assertThat(mixed.getCount()).isEqualTo(2);
    BodyPart alternativePart = mixed.getBodyPart(0);
    assertThat(alternativePart.isMimeType("multipart/alternative")).isTrue();
    MimeMultipart alternative = (MimeMultipart) alternativePart.getContent();
    assertThat(alternative.getCount()).isEqualTo(2);
    assertThat(alternative.getBodyPart(0).isMimeType("text/plain")).isTrue();
    assertThat(((String) alternative.getBodyPart(0).getContent()).replace("\r\n", "\n"))
        .isEqualTo("Hallo Bob,\nhier ist der Bericht.\n.\n..zwei Punkte\nGrüße\n");
    assertThat(alternative.getBodyPart(1).isMimeType("text/html")).isTrue();
    assertThat(((String) alternative.getBodyPart(1).getContent()).trim())
        .isEqualTo("<p>Hallo <b>Bob</b>, hier ist der Bericht. Grüße</p>");
    BodyPart attachment = mixed.getBodyPart(1);
    assertThat(attachment.getDisposition()).isEqualToIgnoringCase(Part.ATTACHMENT);
    assertThat(attachment.getFileName()).isEqualTo("bericht.pdf");
    assertThat(attachment.isMimeType("application/pdf")).isTrue();
    assertThat(attachment.getInputStream().readAllBytes()).isEqualTo(pdf);

    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + op).body());
    assertThat(detail.getString("status")).isEqualTo("SENT");
    assertThat(detail.getString("intake")).isEqualTo("HTTP");
    assertThat(detail.getString("authUser")).isEqualTo("alice");
    assertThat(detail.getString("messageId")).isEqualTo("<" + op + "@gateway.test>");
    assertThat(detail.getJsonArray("recipients")).hasSize(3);
    assertThat(detail.getJsonArray("recipients").stream().map(x -> ((JsonObject) x).getString("status")))
        .containsOnly("ACCEPTED");
  }

  @Test
  void rawMessageIsRelayedByteForByteAfterOneReceivedHeader() throws Exception {
    String raw = String.join("\r\n",
        "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=sel1;",
        " h=from:to:subject; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=dGVzdA==",
        "From: Alice <alice@example.com>",
        "To: Bob <bob@example.net>",
        "Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=",
        "Message-ID: <raw-1@example.com>",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
        "",
        "Grüße — 8-bit UTF-8, kept as it is.",
        ".a line that starts with a dot",
        "..and one with two",
        ".",
        "x".repeat(998),
        "");
    byte[] bytes = raw.getBytes(StandardCharsets.UTF_8);
    JsonObject body = new JsonObject()
        .put("envelope", new JsonObject().put("from", "bounces@example.com")
            .put("to", new JsonArray().add("bob@example.net").add("carol@example.net")))
        .put("raw", Base64.getEncoder().encodeToString(bytes));
    int before = gateway.downstream().messages().size();

    HttpResponse<String> r = client.send(ALICE, "raw-" + UUID.randomUUID(), body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonObject answer = new JsonObject(r.body());
    String op = answer.getString("operationId");
    assertThat(answer.getString("messageId")).isEqualTo("<raw-1@example.com>");
    ScriptedSmtpServer.Received got = gateway.downstream().messages().get(before);
    assertThat(got.mailFrom()).isEqualTo("bounces@example.com");
    assertThat(got.recipients()).containsExactly("bob@example.net", "carol@example.net");
    byte[] afterTrace = got.afterTrace();
    assertThat(new String(got.data(), StandardCharsets.UTF_8)).startsWith("Received: ").contains("with HTTP id " + op);
    assertThat(RelayEndToEndTest.sha256(afterTrace)).isEqualTo(RelayEndToEndTest.sha256(bytes));
    assertThat(afterTrace).isEqualTo(bytes);
    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + op).body());
    assertThat(detail.getString("sha256")).isEqualTo(RelayEndToEndTest.sha256(bytes));
    assertThat(detail.getLong("size")).isEqualTo(bytes.length);
  }

  @Test
  void anApiKeyReadsTheOperationsOfItsOwnSendsOnly() throws Exception {
    HttpResponse<String> r = client.send(ALICE, null, composed());
    assertThat(r.statusCode()).isEqualTo(200);
    String location = r.headers().firstValue("Location").orElseThrow();

    HttpResponse<String> own = client.get(location, ALICE);
    assertThat(own.statusCode()).isEqualTo(200);
    assertThat(new JsonObject(own.body()).getJsonObject("message").getString("status")).isEqualTo("SENT");
    assertThat(client.get(location, BOB).statusCode()).isEqualTo(404);
    assertThat(client.get(location, "test-admin-token").statusCode()).isEqualTo(200);
    assertThat(client.get(location, null).statusCode()).isEqualTo(401);
    // A send key is not an admin token: the ledger itself stays closed to it, however the path is spelled.
    assertThat(client.get("/api/v1/messages", ALICE).statusCode()).isEqualTo(401);
    assertThat(client.get("/api/v1/operations/../messages", ALICE).statusCode()).isEqualTo(401);
    assertThat(client.get("/api/v1/operations/%2E%2E/messages", ALICE).statusCode()).isEqualTo(401);
  }

  @Test
  void aRefusedRecipientMeansNothingIsSentAndEveryVerdictIsReported() throws Exception {
    JsonObject body = composed().put("to", new JsonArray().add("bob@example.net").add("nobody@example.net")
        .add("busy@example.net"));
    Counts before = counts();

    HttpResponse<String> r = client.send(ALICE, "refused-" + UUID.randomUUID(), body);

    assertProblem(r, 422);
    JsonArray recipients = new JsonObject(r.body()).getJsonArray("recipients");
    assertThat(recipients).hasSize(3);
    assertThat(recipients.getJsonObject(0).getBoolean("accepted")).isTrue();
    assertThat(recipients.getJsonObject(1).getString("rcptReply")).isEqualTo("550 5.1.1 No such user");
    assertThat(recipients.getJsonObject(2).getString("rcptReply")).isEqualTo("450 4.2.1 Mailbox busy");
    assertThat(recipients.getJsonObject(1).containsKey("reply")).as("nothing was sent: no final reply to show").isFalse();
    assertThat(counts()).isEqualTo(before.withMail(1));

    HttpResponse<String> busy = client.send(ALICE, null, composed().put("to", new JsonArray().add("busy@example.net")));
    assertProblem(busy, 503);
    assertThat(busy.headers().firstValue("Retry-After")).isPresent();
    assertThat(counts()).isEqualTo(before.withMail(2));
  }

  @Test
  void aDeferredSenderIs503AndNothingIsRecorded() throws Exception {
    Counts before = counts();
    HttpResponse<String> r = client.send(ALICE, "deferred-" + UUID.randomUUID(),
        composed().put("from", "deferred-sender@example.com"));
    assertProblem(r, 503);
    assertThat(new JsonObject(r.body()).getString("downstreamReply")).isEqualTo("451 4.7.1 Try again later");
    assertThat(r.headers().firstValue("Retry-After")).isPresent();
    assertThat(counts()).isEqualTo(before.withMail(1));
  }

  @Test
  void refusedRequestsAreClearProblemsAndNothingIsRecordedOrSent() throws Exception {
    JsonObject raw = new JsonObject()
        .put("envelope", new JsonObject().put("from", "a@example.com").put("to", new JsonArray().add("b@example.net")))
        .put("raw", Base64.getEncoder().encodeToString("Subject: x\r\n\r\nbody\r\n".getBytes(StandardCharsets.UTF_8)));
    record Case(String name, String key, String body, String contentType, int status, String detail) {
      Case(String name, String key, String body, String contentType, int status) {
        this(name, key, body, contentType, status, "");
      }
    }
    List<Case> cases = List.of(
        new Case("CRLF in the subject", ALICE, composed().put("subject", "hi\r\nBcc: evil@example.org").encode(), null, 422,
            "subject contains CR or LF"),
        new Case("LF in a header value", ALICE,
            composed().put("headers", new JsonObject().put("X-Tag", "a\nBcc: evil@example.org")).encode(), null, 422),
        new Case("CRLF in an address", ALICE,
            composed().put("to", new JsonArray().add("bob@example.net\r\nRCPT TO:<evil@example.org>")).encode(), null, 422),
        new Case("CRLF in the envelope", ALICE, raw.copy().put("envelope", new JsonObject()
            .put("from", "a@example.com\r\nRCPT TO:<evil@example.org>").put("to", new JsonArray().add("b@example.net")))
            .encode(), null, 422),
        new Case("CRLF in an attachment name", ALICE, composed().put("attachments", new JsonArray().add(new JsonObject()
            .put("filename", "a.txt\r\nX-Evil: 1").put("content", "YQ=="))).encode(), null, 422),
        new Case("a header the gateway writes", ALICE,
            composed().put("headers", new JsonObject().put("Bcc", "evil@example.org")).encode(), null, 422),
        new Case("not an address", ALICE, composed().put("to", new JsonArray().add("not an address")).encode(), null, 422),
        new Case("bare LF in a raw message", ALICE, raw.copy().put("raw",
            Base64.getEncoder().encodeToString("Subject: x\n\nbody\n".getBytes(StandardCharsets.UTF_8))).encode(), null, 422),
        new Case("a raw line over 998 octets", ALICE, raw.copy().put("raw", Base64.getEncoder().encodeToString(
            ("Subject: x\r\n\r\n" + "y".repeat(999) + "\r\n").getBytes(StandardCharsets.UTF_8))).encode(), null, 422),
        new Case("raw that is not base64", ALICE, raw.copy().put("raw", "%%%not base64%%%").encode(), null, 400),
        new Case("a message over the size limit", ALICE, raw.copy().put("raw", Base64.getEncoder().encodeToString(
            ("Subject: x\r\n\r\n" + ("z".repeat(500) + "\r\n").repeat((int) (MAX_MESSAGE / 500))).getBytes(StandardCharsets.UTF_8)))
            .encode(), null, 413),
        new Case("a body over the request limit", ALICE, composed().put("text", "w".repeat((int) MAX_MESSAGE * 3)).encode(),
            null, 413),
        new Case("invalid JSON", ALICE, "{\"from\": \"alice@example.com\", \"to\": [", null, 400, "not valid JSON"),
        new Case("an empty body", ALICE, "", null, 400, "JSON object"),
        new Case("a JSON array", ALICE, "[1, 2]", null, 400, "must be a JSON object, not an array"),
        new Case("an unknown member", ALICE, composed().put("sendAt", "tomorrow").encode(), null, 400,
            "/sendAt: unknown member"),
        new Case("an unknown attachment member", ALICE, composed().put("attachments", new JsonArray().add(new JsonObject()
            .put("filename", "a.txt").put("content", "YQ==").put("inline", true))).encode(), null, 400,
            "/attachments/0/inline: unknown member"),
        new Case("a wrong type", ALICE, composed().put("to", "bob@example.net").encode(), null, 400, "/to: "),
        new Case("raw and composed at once", ALICE, raw.copy().put("from", "a@example.com").encode(), null, 400),
        new Case("no recipients", ALICE, composed().put("to", new JsonArray()).encode(), null, 422),
        new Case("not JSON", ALICE, "from=alice", "application/x-www-form-urlencoded", 415),
        new Case("no authorization", null, composed().encode(), null, 401),
        new Case("a wrong key", "not-a-key", composed().encode(), null, 401),
        new Case("the admin token", "test-admin-token", composed().encode(), null, 401));
    for (Case c : cases) {
      Counts before = counts();
      HttpResponse<String> r = client.send(c.key(), "key-" + UUID.randomUUID(), c.body(),
          c.contentType() == null ? "application/json" : c.contentType());
      assertProblem(r, c.status(), c.name());
      assertThat(new JsonObject(r.body()).getString("detail")).as(c.name()).contains(c.detail());
      assertThat(counts()).as(c.name()).isEqualTo(before);
    }
  }

  @Test
  void aKeyOverItsRateHears429WithRetryAfterAndNothingHappens() throws Exception {
    assertThat(client.send(SLOW, null, composed()).statusCode()).isEqualTo(200);
    Counts before = counts();
    HttpResponse<String> r = client.send(SLOW, "slow-" + UUID.randomUUID(), composed());
    assertProblem(r, 429);
    long retryAfter = Long.parseLong(r.headers().firstValue("Retry-After").orElseThrow());
    assertThat(retryAfter).isBetween(1L, 100L);
    assertThat(counts()).isEqualTo(before);
    // Another key has its own bucket.
    assertThat(client.send(BOB, null, composed()).statusCode()).isEqualTo(200);
  }

  static void assertProblem(HttpResponse<String> r, int status, String... what) {
    SendClient.assertProblem(r, status, what);
  }

  /** Ledger rows, idempotency keys, MAIL and DATA commands seen gateway.downstream(). */
  record Counts(long messages, long keys, int mail, int data) {
    Counts withMail(int more) {
      return new Counts(messages, keys, mail + more, data);
    }
  }

  static Counts counts() throws Exception {
    return new Counts(count("SELECT count(*) FROM messages"), count("SELECT count(*) FROM idempotency_keys"),
        mailCommands.get(), gateway.downstream().dataCommands());
  }

  static long count(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }
}
