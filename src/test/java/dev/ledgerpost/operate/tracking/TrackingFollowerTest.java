package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Postfix log follower (docs/design.md §8.13) against a log this test writes as Postfix would, for a message the
 * gateway relayed to a smarthost that answered "queued as <id>": each delivery line of that queue id becomes a fact of
 * the recipient it names, classified; a line of a queue id we never relayed is ignored; a line read again adds
 * nothing; the log is followed across a rename and a copytruncate; the position is saved with the facts.
 */
class TrackingFollowerTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final DateTimeFormatter TIME = DateTimeFormatter.ISO_OFFSET_DATE_TIME;
  static final Path LOG = GatewayHarness.tempDir("tracking-follower-").resolve("mail.log");

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("tracking.postfixLog", LOG.toString())
      .with("tracking.pollInterval", "50ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as ABCDEF0" + n);
        }
      });

  private static String line(String program, String queueId, String text) {
    String at = TIME.format(Instant.now().truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    return at + " smarthost postfix/" + program + "[4242]: " + queueId + ": " + text + "\n";
  }

  private static void append(Path f, String lines) throws Exception {
    Files.writeString(f, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  private long facts() throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM delivery_facts");
  }

  private void awaitFacts(long n) throws Exception {
    Poll.until(WAIT, n + " facts", () -> facts() >= n);
    assertThat(facts()).isEqualTo(n);
  }

  private List<String> factRows() throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = TestDatabase.connect(gateway.databaseUrl());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT idx, state, remote_host, dsn, reply, category, rule, source, queue_id FROM delivery_facts ORDER BY id")) {
      while (rs.next()) {
        out.add(rs.getInt(1) + "|" + rs.getString(2) + "|" + rs.getString(3) + "|" + rs.getString(4) + "|" + rs.getString(5) + "|"
            + rs.getString(6) + "|" + rs.getString(7) + "|" + rs.getString(8) + "|" + rs.getString(9));
      }
    }
    return out;
  }

  /** The gauge of the oldest relayed row without news, as scraped. */
  private double newsAge() throws Exception {
    for (String l : gateway.get("/metrics", null).body().split("\n")) {
      if (l.startsWith("ledgerpost_tracking_oldest_without_news_age_seconds ")) {
        return Double.parseDouble(l.substring(l.indexOf(' ') + 1));
      }
    }
    throw new AssertionError("no ledgerpost_tracking_oldest_without_news_age_seconds");
  }

  private List<String> listed(String query) throws Exception {
    var r = gateway.get("/api/v1/messages" + query);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    List<String> ids = new ArrayList<>();
    new io.vertx.core.json.JsonObject(r.body()).getJsonArray("items").forEach(m -> ids.add(((io.vertx.core.json.JsonObject) m).getString("id")));
    return ids;
  }

  @Test
  void deliveryLinesOfOurQueueIdsBecomeFactsAcrossRotationsAndOnlyOnce() throws Exception {
    String queueId;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("sender@example.com", List.of("a@example.net", "B@Example.org"), "Subject: t\r\n\r\nbody");
      assertThat(reply).startsWith("250");
    }
    UUID id = UUID.fromString(LedgerRows.string(gateway.databaseUrl(), "SELECT id::text FROM messages WHERE status = 'SENT'"));
    queueId = LedgerRows.string(gateway.databaseUrl(), "SELECT substring(downstream_reply from 'queued as (\\w+)') FROM messages");
    assertThat(queueId).startsWith("ABCDEF0");

    String bounce = line("smtp", queueId, "to=<b@example.org>, relay=mx.example.org[192.0.2.2]:25, delay=0.4, "
        + "delays=0.1/0/0.2/0.1, dsn=5.1.1, status=bounced (host mx.example.org[192.0.2.2] said: 550 5.1.1 <b@example.org>: "
        + "Recipient address rejected: User unknown\u0007 (in reply to RCPT TO command))");
    append(LOG, line("smtpd", queueId, "client=gateway[127.0.0.1]")
        + line("qmgr", queueId, "from=<sender@example.com>, size=300, nrcpt=2 (queue active)")
        + line("smtp", queueId, "to=<a@example.net>, relay=none, delay=1, delays=0/0/1/0, dsn=4.4.1, status=deferred "
            + "(connect to mx.example.net[192.0.2.1]:25: Connection refused)")
        + bounce
        + line("smtp", "FEDCBA99", "to=<a@example.net>, relay=mx.example.net[192.0.2.1]:25, delay=1, delays=0/0/1/0, "
            + "dsn=2.0.0, status=sent (250 2.0.0 Ok)")
        + line("smtp", queueId, "to=<a@example.net>, relay=mx.example.net[192.0.2.1]:25, delay=9, delays=0/0/1/8, dsn=2.0.0, "
            + "status=sent (250 2.0.0 Ok: queued as 9Q)"));
    awaitFacts(3);
    assertThat(factRows()).containsExactly(
        "0|deferred|null|4.4.1|connect to mx.example.net[192.0.2.1]:25: Connection refused|connection|connection-codes|postfix-log|" + queueId,
        "1|bounced|mx.example.org[192.0.2.2]:25|5.1.1|host mx.example.org[192.0.2.2] said: 550 5.1.1 <b@example.org>: Recipient "
            + "address rejected: User unknown  (in reply to RCPT TO command)|invalid_recipient|invalid-codes|postfix-log|" + queueId,
        "0|delivered|mx.example.net[192.0.2.1]:25|2.0.0|250 2.0.0 Ok: queued as 9Q|null|null|postfix-log|" + queueId);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM delivery_facts WHERE message_id <> '" + id + "'")).isZero();
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM tracking_queue_ids WHERE queue_id = 'FEDCBA99'"))
        .as("a queue id we never relayed").isZero();
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT status FROM messages")).as("tracking never changes the row").isEqualTo("SENT");
    Poll.until(WAIT, "the position saved at the end of the file", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT position FROM tracking_log_positions") == Files.size(LOG));

    // Read again: the same line adds nothing (the line after it shows it was read).
    append(LOG, bounce + line("smtp", queueId, "to=<a@example.net>, relay=mx.example.net[192.0.2.1]:25, delay=1, dsn=4.2.2, "
        + "status=deferred (host mx.example.net[192.0.2.1] said: 452 4.2.2 Mailbox full)"));
    awaitFacts(4);

    // Rotation by rename: what Postfix still writes to the old file is read, then the new file.
    Files.move(LOG, LOG.resolveSibling("mail.log.1"));
    append(LOG.resolveSibling("mail.log.1"), line("smtp", queueId, "to=<a@example.net>, relay=mx.example.net[192.0.2.1]:25, "
        + "delay=2, dsn=4.7.1, status=deferred (host mx.example.net[192.0.2.1] said: 451 4.7.1 Greylisted, try again later)"));
    append(LOG, line("smtp", queueId, "to=<b@example.org>, relay=mx.example.org[192.0.2.2]:25, delay=3, dsn=5.7.1, "
        + "status=bounced (host mx.example.org[192.0.2.2] said: 554 5.7.1 Service unavailable; blocked using zen.spamhaus.org)"));
    awaitFacts(6);

    // Rotation by copytruncate: the file is cut to nothing in place and written again from its start.
    Files.copy(LOG, LOG.resolveSibling("mail.log.2"));
    Files.write(LOG, new byte[0], StandardOpenOption.TRUNCATE_EXISTING);
    append(LOG, line("smtp", queueId, "to=<b@example.org>, relay=none, delay=400000, dsn=4.4.1, status=expired "
        + "(connect to mx.example.org[192.0.2.2]:25: Connection timed out)"));
    awaitFacts(7);
    assertThat(factRows().subList(3, 7)).extracting(r -> r.split("\\|")[0] + "|" + r.split("\\|")[1] + "|" + r.split("\\|")[5])
        .containsExactly("0|deferred|mailbox_full", "0|deferred|policy", "1|bounced|spam_block", "1|expired|connection");

    // Each fact's event, written with it (a line read again wrote none).
    String url = gateway.databaseUrl();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'")).isEqualTo(7);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.delivered'")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.deferred'")).isEqualTo(3);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.bounced'")).isEqualTo(3);
    assertThat(LedgerRows.string(url, "SELECT payload->>'recipient' || ' ' || (payload->>'category') || ' ' || (payload->>'rule') || ' '"
        + " || (payload->>'dsn') || ' ' || (payload->>'state') FROM outbox_events WHERE type = 'recipient.bounced' AND payload->>'dsn' = '5.1.1'"))
        .isEqualTo("B@Example.org invalid_recipient invalid-codes 5.1.1 bounced");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%' AND message_id <> '" + id + "'")).isZero();
    Poll.until(WAIT, "the events published", () -> LedgerRows.count(url,
        "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%' AND pub_seq IS NOT NULL") == 7);

    // The detail shows each recipient's facts, in the order recorded, beside a status tracking never changed.
    var detail = gateway.get("/api/v1/messages/" + id);
    assertThat(detail.statusCode()).as(detail.body()).isEqualTo(200);
    io.vertx.core.json.JsonArray recipients = new io.vertx.core.json.JsonObject(detail.body()).getJsonArray("recipients");
    assertThat(recipients.getJsonObject(0).getString("status")).isEqualTo("ACCEPTED");
    assertThat(recipients.getJsonObject(0).getJsonArray("delivery").stream()
        .map(f -> ((io.vertx.core.json.JsonObject) f).getString("state") + "/" + ((io.vertx.core.json.JsonObject) f).getString("category")))
        .containsExactly("deferred/connection", "delivered/null", "deferred/mailbox_full", "deferred/policy");
    io.vertx.core.json.JsonObject bounced = recipients.getJsonObject(1).getJsonArray("delivery").getJsonObject(0);
    assertThat(bounced.getString("state")).isEqualTo("bounced");
    assertThat(bounced.getString("dsn")).isEqualTo("5.1.1");
    assertThat(bounced.getString("remoteHost")).isEqualTo("mx.example.org[192.0.2.2]:25");
    assertThat(bounced.getString("rule")).isEqualTo("invalid-codes");
    assertThat(bounced.getString("queueId")).isEqualTo(queueId);
    assertThat(bounced.getString("evidence")).as("the line, its control character a space").isEqualTo(bounce.strip().replace('\u0007', ' '));
    assertThat(recipients.getJsonObject(1).getJsonArray("delivery")).hasSize(3);

    // Every relayed row has had news: the age of the oldest without is 0; the second one's grows until it has some.
    Poll.until(WAIT, "no row without news", () -> newsAge() == 0);

    // The list's tracking filters: a second message, relayed but without news, is in neither.
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("sender@example.com", List.of("c@example.net"), "Subject: t2\r\n\r\nbody")).startsWith("250");
    }
    assertThat(listed("")).hasSize(2);
    assertThat(listed("?delivery=bounced")).containsExactly(id.toString());
    assertThat(listed("?delivery=bounced&category=invalid_recipient")).containsExactly(id.toString());
    assertThat(listed("?category=mailbox_full")).containsExactly(id.toString());
    assertThat(listed("?delivery=delivered&category=dns")).isEmpty();
    assertThat(listed("?delivery=queued")).isEmpty();
    assertThat(gateway.get("/api/v1/messages?delivery=lost").statusCode()).isEqualTo(400);
    Poll.until(WAIT, "the second row without news", () -> newsAge() > 0);
    assertThat(newsAge()).isLessThan(600);

    // A delivery logged before the row that names its queue id is committed (Postfix can be that fast) is tried again.
    long before = facts();
    append(LOG, line("smtp", "ABCDEF03", "to=<d@example.net>, relay=mx.example.net[192.0.2.1]:25, delay=0.1, dsn=2.0.0, "
        + "status=sent (250 2.0.0 Ok)"));
    Poll.until(WAIT, "the early line read", () -> LedgerRows.count(url, "SELECT position FROM tracking_log_positions") == Files.size(LOG));
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("sender@example.com", List.of("d@example.net"), "Subject: t3\r\n\r\nbody")).startsWith("250");
    }
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE downstream_reply LIKE '%queued as ABCDEF03'")).isEqualTo(1);
    awaitFacts(before + 1);
    assertThat(LedgerRows.string(url, "SELECT state FROM delivery_facts WHERE queue_id = 'ABCDEF03'")).isEqualTo("delivered");

    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_tracking_total{category=\"invalid_recipient\",state=\"bounced\"} 1.0")
        .contains("ledgerpost_tracking_total{category=\"none\",state=\"delivered\"} 2.0")
        .contains("ledgerpost_tracking_total{category=\"connection\",state=\"deferred\"} 1.0");
  }
}
