package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hard bounces feed the suppression list (docs/design.md §8.8): a bounced fact of a category in
 * {@code suppression.bounceCategories} (default {@code invalid_recipient}) adds its recipient in the fact's transaction,
 * naming the ledger row and the reply, with its {@code suppression.added} event; a mailbox_full bounce adds nothing; a
 * second bounce of the address adds no second entry nor event; the next message to it is refused at RCPT with the
 * suppression reply naming the ledger row, and removing the entry lets it through. A send key's bounced mail adds an
 * entry of its user's scope only.
 */
class BounceSuppressionTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final String CAROL_KEY = "bounce-suppression-carol";
  /** Each test's gateway (and database) follows a log of its own. */
  final Path log = GatewayHarness.tempDir("bounce-suppression-").resolve("mail.log");

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(CAROL_KEY, "carol:1000")).toString())
      .with("tracking.postfixLog", log.toString())
      .with("tracking.pollInterval", "50ms")
      .with("suppression.refreshInterval", "100ms")
      .with("notify.pollInterval", "100ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as B0BCE0" + n); // a short queue id is hex
        }
      });

  private static String line(String program, String queueId, String text) {
    String at = DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(Instant.now().truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    return at + " smarthost postfix/" + program + "[4242]: " + queueId + ": " + text + "\n";
  }

  private void append(String lines) throws Exception {
    Files.writeString(log, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  private static String bounced(String queueId, String to, String dsn, String said) {
    return line("smtp", queueId, "to=<" + to + ">, relay=mx.example.org[192.0.2.2]:25, delay=0.4, delays=0.1/0/0.2/0.1, dsn=" + dsn
        + ", status=bounced (host mx.example.org[192.0.2.2] said: " + said + " (in reply to RCPT TO command))");
  }

  private long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  private String string(String sql) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), sql);
  }

  private String queueIdOf(UUID id) throws Exception {
    return string("SELECT substring(downstream_reply from 'queued as (\\w+)') FROM messages WHERE id = '" + id + "'");
  }

  private static String rcpt(SmtpTestClient c, String to) throws Exception {
    assertThat(c.command("MAIL FROM:<app@example.com>")).startsWith("250");
    String reply = c.command("RCPT TO:<" + to + ">");
    assertThat(c.command("RSET")).startsWith("250");
    return reply;
  }

  private static SmtpTestClient client(int port) throws Exception {
    SmtpTestClient c = new SmtpTestClient(port);
    c.reply();
    assertThat(c.command("EHLO client.test")).startsWith("250");
    return c;
  }

  @Test
  void anInvalidRecipientBounceSuppressesTheAddressAndNamesItsLedgerRow() throws Exception {
    try (SmtpTestClient c = client(gateway.smtpPort())) {
      assertThat(c.sendMail("app@example.com", List.of("Gone@Example.ORG", "full@example.net"), "Subject: t\r\n\r\nbody"))
          .startsWith("250");
    }
    UUID id = UUID.fromString(string("SELECT id::text FROM messages WHERE status = 'SENT'"));
    String queueId = queueIdOf(id);
    String reply = "550 5.1.1 <Gone@Example.ORG>: Recipient address rejected: User unknown";
    append(line("qmgr", queueId, "from=<app@example.com>, size=300, nrcpt=2 (queue active)")
        + bounced(queueId, "Gone@Example.ORG", "5.1.1", reply)
        + bounced(queueId, "full@example.net", "5.2.2", "552 5.2.2 Mailbox full"));
    Poll.until(WAIT, "two facts", () -> count("SELECT count(*) FROM delivery_facts") == 2);
    assertThat(string("SELECT category FROM delivery_facts WHERE idx = 1")).isEqualTo("mailbox_full");

    // The invalid recipient is on the list, in the facts' transaction: its entry names the row, the reply, the bounce.
    assertThat(count("SELECT count(*) FROM suppressions")).as("mailbox_full adds nothing by default").isEqualTo(1);
    assertThat(string("SELECT address || '|' || scope || '|' || source || '|' || category || '|' || message_id || '|' || added_by"
        + " || '|' || reason FROM suppressions")).isEqualTo("Gone@example.org|global|bounce|invalid_recipient|" + id
        + "|bounces (postfix-log)|bounced (invalid_recipient, 5.1.1) by mx.example.org[192.0.2.2]:25");
    assertThat(string("SELECT reply FROM suppressions")).isEqualTo(string("SELECT reply FROM delivery_facts WHERE idx = 0"))
        .contains(reply);
    assertThat(string("SELECT payload->>'address' || '|' || (payload->>'source') || '|' || (payload->>'messageId') FROM outbox"
        + " WHERE type = 'suppression.added'")).isEqualTo("Gone@example.org|bounce|" + id);
    Poll.until(WAIT, "the event published", () -> count("SELECT count(*) FROM outbox_events WHERE type = 'suppression.added'"
        + " AND pub_seq IS NOT NULL") == 1);

    // Another bounce of the address (a retry's, a second source's): one entry, no second event.
    append(bounced(queueId, "Gone@Example.ORG", "5.1.1", "550 5.1.1 No such user here"));
    Poll.until(WAIT, "the third fact", () -> count("SELECT count(*) FROM delivery_facts") == 3);
    assertThat(count("SELECT count(*) FROM suppressions")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM outbox_events WHERE type = 'suppression.added'")).isEqualTo(1);
    assertThat(string("SELECT reply FROM suppressions")).as("the first bounce still names the entry").contains(reply);

    // A new message to the address (its domain in any case: the list keeps the local part as given) is refused at RCPT, saying why and naming the row; the mailbox_full one is not.
    String expected = "550 5.1.1 <Gone@EXAMPLE.org> suppressed since " + Instant.now().atOffset(ZoneOffset.UTC).toLocalDate()
        + ": bounced (invalid_recipient, 5.1.1) by mx.example.org[192.0.2.2]:25 (ledger " + id + ")";
    try (SmtpTestClient c = client(gateway.smtpPort())) {
      String[] last = new String[1];
      if (!Poll.within(WAIT, () -> (last[0] = rcpt(c, "Gone@EXAMPLE.org")).startsWith("550"))) {
        throw new AssertionError("the node's copy does not hold the entry: " + last[0]);
      }
      assertThat(rcpt(c, "Gone@EXAMPLE.org")).isEqualTo(expected);
      assertThat(rcpt(c, "full@example.net")).startsWith("250");
    }

    // Removing the entry lets the address through.
    HttpResponse<String> removed = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + gateway.httpPort() + "/api/v1/suppressions?address=Gone%40example.org&scope=global"))
        .timeout(Duration.ofSeconds(10)).header("Authorization", "Bearer " + gateway.gateway().adminToken())
        .header("X-Operator", "ops").DELETE().build(), HttpResponse.BodyHandlers.ofString());
    assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
    try (SmtpTestClient c = client(gateway.smtpPort())) {
      assertThat(c.sendMail("app@example.com", List.of("Gone@example.org"), "Subject: t\r\n\r\nbody")).startsWith("250");
    }
  }

  @Test
  void aSendKeysBounceSuppressesTheAddressForItsUserOnly() throws Exception {
    JsonObject send = new JsonObject().put("from", "app@example.com").put("to", new JsonArray().add("lost@example.org"))
        .put("subject", "s").put("text", "body\n");
    HttpResponse<String> sent = gateway.sendClient().send(CAROL_KEY, null, send);
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    UUID id = UUID.fromString(new JsonObject(sent.body()).getString("operationId"));
    append(bounced(queueIdOf(id), "lost@example.org", "5.1.1", "550 5.1.1 User unknown"));
    Poll.until(WAIT, "the entry", () -> count("SELECT count(*) FROM suppressions") == 1);
    assertThat(string("SELECT scope || '|' || message_id FROM suppressions")).isEqualTo("user:carol|" + id);

    Poll.until(WAIT, "carol's next send refused", () -> gateway.sendClient().send(CAROL_KEY, null, send).statusCode() == 422);
    HttpResponse<String> refused = gateway.sendClient().send(CAROL_KEY, null, send);
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
    assertThat(new JsonObject(refused.body()).getJsonArray("suppressed").getJsonObject(0).getString("scope")).isEqualTo("user:carol");
    try (SmtpTestClient c = client(gateway.smtpPort())) { // unauthenticated relay: only global entries apply
      assertThat(rcpt(c, "lost@example.org")).startsWith("250");
    }
  }
}
