package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A short Postfix queue id is its microsecond and its queue file's inode, so Postfix gives it again as soon as its
 * message is removed and the inode reused: under load, minutes later, not days (docs/design.md §8.13, "Queue ids are
 * reused"). Each life of the queue id (from its client= line to its "removed") is its own message: each delivery line
 * is a fact of the row of its own life, never of an earlier one's; a life whose lines were read in one batch leaves no
 * mapping behind, and one that spanned batches has its mapping deleted at its "removed".
 *
 * <p>Before: the second message's lines found the first's mapping (six days were thought to separate two uses), so
 * the first row got a second delivered fact and the second row none: the rows "SENT without a delivered fact" of the
 * tracking bench's warm-up. And a life's delivery line minutes after its client= line (Postfix kept the message), when
 * the client= line was read before our settle had committed, was looked for around its own time, 3 minutes back, and
 * never found: it is looked for around its life's client= line.
 */
class TrackingQueueIdReuseTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  final Path log = GatewayHarness.tempDir("tracking-reuse-").resolve("mail.log");

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("tracking.postfixLog", log.toString())
      .with("tracking.pollInterval", "50ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as 3F2A1B8C4D"); // every message: the same short queue id
        }
      });

  private static String line(Instant at, String program, String text) {
    String t = DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(at.truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    return t + " smarthost postfix/" + program + "[4242]: 3F2A1B8C4D: " + text + "\n";
  }

  private static String sent(Instant at, String to) {
    return line(at, "smtp", "to=<" + to + ">, relay=mx.example.net[192.0.2.1]:25, delay=0.2, delays=0.1/0/0.05/0.05, dsn=2.0.0, "
        + "status=sent (250 2.0.0 Ok " + at.toEpochMilli() + ")");
  }

  private void append(String lines) throws Exception {
    Files.writeString(log, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  /** Relays one message to {@code to} and answers its ledger id. */
  private String relay(String to) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("sender@example.com", List.of(to), "Subject: reuse\r\n\r\nbody");
      assertThat(reply).startsWith("250");
    }
    return LedgerRows.string(gateway.databaseUrl(), "SELECT id::text FROM messages ORDER BY id DESC LIMIT 1");
  }

  private long delivered(String id) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM delivery_facts WHERE state = 'delivered' AND message_id = '" + id + "'");
  }

  private void awaitRead() throws Exception {
    Poll.until(WAIT, "the follower past the last line", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT coalesce(max(position), 0) FROM tracking_log_positions") == Files.size(log));
  }

  @Test
  void eachLifeOfAReusedQueueIdIsItsOwnMessage() throws Exception {
    String url = gateway.databaseUrl();
    // Life 1: Postfix's client= line comes at our first RCPT, before the ledger id; then the delivery and "removed".
    Instant t1 = Instant.now();
    String first = relay("same@example.net");
    append(line(t1, "smtpd", "client=gateway[127.0.0.1]") + line(t1, "qmgr", "from=<sender@example.com>, size=300, nrcpt=1 (queue active)")
        + sent(Instant.now(), "same@example.net") + line(Instant.now(), "qmgr", "removed"));
    Poll.until(WAIT, "the first life's fact", () -> delivered(first) == 1);
    awaitRead();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM tracking_queue_ids")).as("a life read in one batch maps nothing").isZero();

    // Life 2: the same queue id, the same recipient, another message.
    Instant t2 = Instant.now();
    String second = relay("same@example.net");
    assertThat(second).isNotEqualTo(first);
    append(line(t2, "smtpd", "client=gateway[127.0.0.1]") + sent(Instant.now(), "same@example.net") + line(Instant.now(), "qmgr", "removed"));
    Poll.until(WAIT, "the second life's fact on the second row", () -> delivered(second) == 1);
    awaitRead();
    assertThat(delivered(first)).as("the first row has its own fact only").isEqualTo(1);

    // Life 3: its client= line in one batch, its delivery in a later one: the mapping is recorded, then deleted at
    // its "removed"; an earlier life's lines never reach it and its lines never reach an earlier row.
    Instant t3 = Instant.now();
    String third = relay("same@example.net");
    append(line(t3, "smtpd", "client=gateway[127.0.0.1]"));
    Poll.until(WAIT, "the third life mapped", () -> LedgerRows.count(url,
        "SELECT count(*) FROM tracking_queue_ids WHERE message_id = '" + third + "'") == 1);
    append(sent(Instant.now(), "same@example.net"));
    Poll.until(WAIT, "the third life's fact", () -> delivered(third) == 1);
    append(line(Instant.now(), "qmgr", "removed"));
    Poll.until(WAIT, "the mapping deleted at its removed", () -> LedgerRows.count(url, "SELECT count(*) FROM tracking_queue_ids") == 0);
    awaitRead();
    assertThat(delivered(first)).isEqualTo(1);
    assertThat(delivered(second)).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts")).isEqualTo(3);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.delivered'")).isEqualTo(3);
  }

  @Test
  void aDeliveryLineMinutesAfterItsClientLineFindsTheRowOfItsLife() throws Exception {
    // The client= line is recorded before the row that names the queue id exists (our settle is not in yet).
    Instant t = Instant.now();
    append(line(t, "smtpd", "client=gateway[127.0.0.1]"));
    awaitRead();
    String id = relay("late@example.net");
    // Postfix kept the message: its delivery line comes 4 minutes later (by its time stamp), beyond the wide window's
    // 3 minutes before the line, and the row is found by the life's client= line.
    append(sent(t.plus(Duration.ofMinutes(4)), "late@example.net") + line(t.plus(Duration.ofMinutes(4)), "qmgr", "removed"));
    Poll.until(WAIT, "the late line's fact on its row", () -> delivered(id) == 1);
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT queue_id FROM delivery_facts")).isEqualTo("3F2A1B8C4D");
    Poll.until(WAIT, "no mapping left", () -> LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM tracking_queue_ids") == 0);
  }
}
