package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Returned DSNs through the SMTP intake (docs/design.md §8.13, "Returned DSNs"): a message relayed with an ENVID, then a
 * DSN for it submitted with the empty sender, is relayed as any message and becomes a fact with source {@code dsn} of
 * the recipient it names, classified, with its event and in the message detail; one without ENVID is matched by the
 * returned Message-ID and the Final-Recipient; a malformed one, one for a row no longer there and one past retention
 * are recorded as such, and the intake answers each as any message.
 */
class TrackingDsnTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  private static final Pattern QUEUED = Pattern.compile("queued as ([0-9a-f-]{36})");

  /** Set: the smarthost's answer to the next DATA waits (a relay under way) until {@link #held} is completed. */
  private volatile boolean holdNext;
  private final java.util.concurrent.atomic.AtomicReference<java.util.function.Consumer<String>> held =
      new java.util.concurrent.atomic.AtomicReference<>();
  /** Set: the smarthost's answer to the next DATA, once. */
  private final java.util.concurrent.atomic.AtomicReference<String> nextAnswer = new java.util.concurrent.atomic.AtomicReference<>();

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .script(g -> new DsnSmarthost() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          if (holdNext) {
            holdNext = false;
            io.vertx.core.Promise<String> answer = io.vertx.core.Promise.promise();
            io.vertx.core.Context context = io.vertx.core.Vertx.currentContext();
            held.set(reply -> context.runOnContext(v -> answer.complete(reply)));
            return answer.future();
          }
          String once = nextAnswer.getAndSet(null);
          if (once != null) {
            return Future.succeededFuture(once);
          }
          return DsnSmarthost.super.endOfData(message, n);
        }
      });

  /** A Postfix-shaped DSN: {@code fields} the per-message fields, then one recipient, then the returned headers. */
  static String dsn(String messageFields, String recipient, String action, String status, String diagnostic, String returnedMessageId) {
    return ("From: MAILER-DAEMON@smarthost.example (Mail Delivery System)\n"
        + "To: sender@example.com\n"
        + "Subject: Undelivered Mail Returned to Sender\n"
        + "MIME-Version: 1.0\n"
        + "Content-Type: multipart/report; report-type=delivery-status;\n"
        + "\tboundary=\"B1.smarthost\"\n"
        + "\n"
        + "--B1.smarthost\n"
        + "Content-Type: text/plain\n"
        + "\n"
        + "Your message could not be delivered.\n"
        + "\n"
        + "--B1.smarthost\n"
        + "Content-Type: message/delivery-status\n"
        + "\n"
        + "Reporting-MTA: dns; smarthost.example\n"
        + messageFields
        + "\n"
        + "Final-Recipient: rfc822; " + recipient + "\n"
        + "Action: " + action + "\n"
        + "Status: " + status + "\n"
        + "Remote-MTA: dns; mx.example.org\n"
        + "Diagnostic-Code: smtp; " + diagnostic + "\n"
        + "\n"
        + "--B1.smarthost\n"
        + "Content-Type: text/rfc822-headers\n"
        + "\n"
        + "From: sender@example.com\n"
        + "Subject: t\n"
        + (returnedMessageId == null ? "" : "Message-ID: " + returnedMessageId + "\n")
        + "\n"
        + "--B1.smarthost--\n").replace("\n", "\r\n");
  }

  /** Relays one message; answers its ledger id. */
  private UUID relay(String mail, List<String> to, String headers) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO client.test")).contains("250-DSN");
      assertThat(c.command("MAIL " + mail)).startsWith("250");
      for (String t : to) {
        assertThat(c.command("RCPT TO:<" + t + ">")).startsWith("250");
      }
      assertThat(c.command("DATA")).startsWith("354");
      c.send(headers + "\r\n\r\nbody\r\n.\r\n");
      return idOf(c.reply());
    }
  }

  /** Submits a DSN with the empty sender, as a reporting MTA would; answers its own ledger id (a 250 like any message's). */
  private UUID returnDsn(String message) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("", List.of("sender@example.com"), message);
      return idOf(reply);
    }
  }

  private static UUID idOf(String reply) {
    assertThat(reply).startsWith("250");
    Matcher m = QUEUED.matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return UUID.fromString(m.group(1));
  }

  /** Waits for the DSN's own record and answers "result|reason|facts|matched". */
  private String handled(UUID dsn) throws Exception {
    String url = gateway.databaseUrl();
    Poll.until(WAIT, "DSN " + dsn + " handled", () -> LedgerRows.count(url, "SELECT count(*) FROM tracking_dsns WHERE message_id = '" + dsn + "'") == 1);
    return LedgerRows.string(url, "SELECT result || '|' || coalesce(reason, '') || '|' || facts || '|' || coalesce(matched_message_id::text, '')"
        + " FROM tracking_dsns WHERE message_id = '" + dsn + "'");
  }

  private List<String> facts(UUID id) throws Exception {
    List<String> out = new ArrayList<>();
    try (var c = dev.ledgerpost.testing.TestDatabase.connect(gateway.databaseUrl());
        var st = c.createStatement();
        var rs = st.executeQuery("SELECT idx, state, dsn, category, rule, source, remote_host, reply FROM delivery_facts WHERE message_id = '"
            + id + "' ORDER BY id")) {
      while (rs.next()) {
        out.add(rs.getInt(1) + "|" + rs.getString(2) + "|" + rs.getString(3) + "|" + rs.getString(4) + "|" + rs.getString(5) + "|"
            + rs.getString(6) + "|" + rs.getString(7) + "|" + rs.getString(8));
      }
    }
    return out;
  }

  @Test
  void aDsnMatchedByEnvidBecomesAFactWithItsEventAndIsInTheDetail() throws Exception {
    UUID id = relay("FROM:<sender@example.com> RET=HDRS ENVID=order+2B1234", List.of("a@example.net", "B@Example.org"),
        "Subject: t\r\nMessage-ID: <m1@app.example.com>");
    String url = gateway.databaseUrl();
    assertThat(LedgerRows.string(url, "SELECT dsn_envid FROM messages WHERE id = '" + id + "'")).isEqualTo("order+2B1234");

    // Postfix writes the ENVID decoded (order+1234 here); the recipient as Postfix saw it, in another case.
    String returned = dsn("Original-Envelope-Id: order+1234\nArrival-Date: Fri, 4 Dec 2026 21:00:01 +0000\n", "b@example.org",
        "failed", "5.1.1", "550 5.1.1 <b@example.org>: Recipient address rejected: User unknown", "<other@app.example.com>");
    UUID dsn = returnDsn(returned);
    assertThat(handled(dsn)).isEqualTo("matched|by ENVID|1|" + id);
    assertThat(facts(id)).containsExactly("1|bounced|5.1.1|invalid_recipient|invalid-codes|dsn|mx.example.org|"
        + "550 5.1.1 <b@example.org>: Recipient address rejected: User unknown");
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + dsn + "'")).as("the DSN itself is relayed").isEqualTo("SENT");
    assertThat(gateway.downstream().messages()).hasSize(2);
    assertThat(gateway.downstream().messages().get(1).mailFrom()).isEmpty();
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + id + "'")).as("tracking never changes the row").isEqualTo("SENT");

    // Its event, written with it.
    assertThat(LedgerRows.string(url, "SELECT payload->>'recipient' || ' ' || (payload->>'state') || ' ' || (payload->>'category') || ' '"
        + " || (payload->>'source') FROM outbox_events WHERE type = 'recipient.bounced' AND message_id = '" + id + "'"))
        .isEqualTo("B@Example.org bounced invalid_recipient dsn");
    // A hard bounce a DSN reports feeds the suppression list as the log's does (design.md §8.8), in the fact's transaction.
    assertThat(LedgerRows.string(url, "SELECT address || '|' || scope || '|' || source || '|' || category || '|' || message_id"
        + " || '|' || added_by || '|' || reply FROM suppressions"))
        .isEqualTo("B@example.org|global|bounce|invalid_recipient|" + id + "|bounces (dsn)|"
            + "550 5.1.1 <b@example.org>: Recipient address rejected: User unknown");

    // The same DSN again (a reporting MTA's retry, or a loop) is the loop guard's: taken and kept, never relayed twice,
    // and it adds no fact: one fact per source per event.
    UUID again;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("", List.of("sender@example.com"), returned);
      Matcher m = Pattern.compile("^250 2\\.0\\.0 DSN recorded by tracking \\(ledger ([0-9a-f-]{36})\\), not relayed: "
          + "the same report was relayed before as " + dsn + "$").matcher(reply.strip());
      assertThat(m.find()).as(reply).isTrue();
      again = UUID.fromString(m.group(1));
    }
    assertThat(handled(again)).isEqualTo("looped|the same report was relayed before as " + dsn + "|0|");
    assertThat(gateway.downstream().messages()).as("not relayed twice").hasSize(2);
    assertThat(LedgerRows.string(url, "SELECT status || ' ' || route || ' ' || downstream_reply FROM messages WHERE id = '" + again + "'"))
        .isEqualTo("CAPTURED capture 250 2.0.0 DSN kept by tracking, not relayed again: the same report was relayed before as " + dsn);
    assertThat(facts(id)).hasSize(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'suppression.added'")).as("one entry, one event")
        .isEqualTo(1);

    var detail = gateway.get("/api/v1/messages/" + id);
    assertThat(detail.statusCode()).as(detail.body()).isEqualTo(200);
    JsonArray recipients = new JsonObject(detail.body()).getJsonArray("recipients");
    assertThat(recipients.getJsonObject(0).getJsonArray("delivery")).isEmpty();
    JsonObject fact = recipients.getJsonObject(1).getJsonArray("delivery").getJsonObject(0);
    assertThat(fact.getString("state")).isEqualTo("bounced");
    assertThat(fact.getString("source")).isEqualTo("dsn");
    assertThat(fact.getString("category")).isEqualTo("invalid_recipient");
    assertThat(fact.getString("evidence")).startsWith("DSN " + dsn + " from smarthost.example: Final-Recipient: rfc822; b@example.org");

    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_tracking_dsn_total{result=\"matched\"} 1.0")
        .contains("ledgerpost_tracking_dsn_total{result=\"looped\"} 1.0")
        .contains("ledgerpost_tracking_total{category=\"invalid_recipient\",state=\"bounced\"} 1.0");
  }

  /**
   * The loop guard's durable half (design.md §8.13): a report relayed by another node, or before a restart, is known by
   * its row in tracking_dsns (V112's dsn_key and relayed), not only by this node's memory.
   */
  @Test
  void aReportRelayedBeforeByAnotherNodeIsKeptNotRelayedAgain() throws Exception {
    String url = gateway.databaseUrl();
    String returned = dsn("Original-Envelope-Id: elsewhere-1\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null);
    byte[] key = DsnReport.identity((DsnReport.Report) DsnReport.parse(returned.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    UUID earlier = UUID.randomUUID();
    try (var c = dev.ledgerpost.testing.TestDatabase.connect(url);
        var st = c.prepareStatement("INSERT INTO tracking_dsns (message_id, result, reason, facts, dsn_key, relayed)"
            + " VALUES (?, 'unmatched', 'no row with ENVID elsewhere-1', 0, ?, true)")) {
      st.setObject(1, earlier);
      st.setBytes(2, key);
      st.executeUpdate();
    }
    String reply;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      reply = c.sendMail("", List.of("sender@example.com"), returned).strip();
    }
    assertThat(reply).startsWith("250 2.0.0 DSN recorded by tracking (ledger ")
        .endsWith("), not relayed: the same report was relayed before as " + earlier);
    assertThat(gateway.downstream().messages()).as("nothing relayed").isEmpty();
    UUID kept = UUID.fromString(reply.substring(reply.indexOf("(ledger ") + 8, reply.indexOf("(ledger ") + 44));
    assertThat(handled(kept)).isEqualTo("looped|the same report was relayed before as " + earlier + "|0|");
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + kept + "'")).isEqualTo("CAPTURED");
  }

  /**
   * A smarthost that routes a DSN straight back can bring it here again before its first relay has even settled: the
   * second arrival is the loop's, kept and not relayed, although nothing of the first is written yet.
   */
  @Test
  void theSameReportArrivingAgainWhileItsFirstRelayIsUnderWayIsTheLoops() throws Exception {
    String returned = dsn("Original-Envelope-Id: underway-1\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null);
    holdNext = true;
    java.util.concurrent.CompletableFuture<String> first = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
        c.reply();
        return c.sendMail("", List.of("sender@example.com"), returned).strip();
      } catch (Exception e) {
        throw new java.util.concurrent.CompletionException(e);
      }
    });
    Poll.until(WAIT, "the first DSN's body at the smarthost, its answer held", () -> held.get() != null);
    String again;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      again = c.sendMail("", List.of("sender@example.com"), returned).strip();
    }
    assertThat(again).startsWith("250 2.0.0 DSN recorded by tracking (ledger ")
        .endsWith("not relayed: the same report arrived again while its relay was under way");
    held.get().accept("250 2.0.0 Ok: queued as HELD1");
    assertThat(first.get(30, java.util.concurrent.TimeUnit.SECONDS)).startsWith("250 ").doesNotContain("DSN recorded");
    assertThat(gateway.downstream().messages()).as("relayed once").hasSize(1);
    UUID kept = UUID.fromString(again.substring(again.indexOf("(ledger ") + 8, again.indexOf("(ledger ") + 44));
    assertThat(handled(kept)).isEqualTo("looped|the same report arrived again while its relay was under way|0|");
  }

  /** A DSN the smarthost did not take was not relayed: the reporting MTA's retry of it is relayed, not taken for a loop. */
  @Test
  void aDsnTheSmarthostDeferredIsRelayedWhenItsSenderTriesAgain() throws Exception {
    String returned = dsn("Original-Envelope-Id: deferred-1\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null);
    nextAnswer.set("451 4.3.0 try again later");
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("", List.of("sender@example.com"), returned)).startsWith("451");
    }
    UUID retried = returnDsn(returned);
    assertThat(handled(retried)).startsWith("unmatched|");
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT status FROM messages WHERE id = '" + retried + "'")).isEqualTo("SENT");
  }

  @Test
  void withoutEnvidTheReturnedMessageIdAndTheFinalRecipientMatch() throws Exception {
    UUID id = relay("FROM:<sender@example.com>", List.of("a@example.net", "c@example.net"), "Subject: t\r\nMessage-ID: <m2@app.example.com>");
    UUID other = relay("FROM:<sender@example.com>", List.of("c@example.net"), "Subject: t\r\nMessage-ID: <m3@app.example.com>");
    UUID dsn = returnDsn(dsn("", "C@example.net", "delayed", "4.2.2", "452 4.2.2 Mailbox full", "<m2@app.example.com>"));
    assertThat(handled(dsn)).isEqualTo("matched|by Message-ID|1|" + id);
    assertThat(facts(id)).containsExactly("1|deferred|4.2.2|mailbox_full|mailbox-full-codes|dsn|mx.example.org|452 4.2.2 Mailbox full");
    assertThat(facts(other)).isEmpty();
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT type FROM outbox_events WHERE message_id = '" + id + "' AND type LIKE 'recipient.%'"))
        .isEqualTo("recipient.deferred");

    // A recipient the row does not have: unmatched, nothing recorded.
    UUID stranger = returnDsn(dsn("", "z@example.net", "failed", "5.1.1", "550 5.1.1 no", "<m2@app.example.com>"));
    assertThat(handled(stranger)).isEqualTo("unmatched|no reported recipient is one of the rows' with Message-ID <m2@app.example.com>|0|");
    assertThat(facts(id)).hasSize(1);
  }

  @Test
  void malformedUnknownDeletedAndExpiredDsnsAreRecordedAndTheIntakeGoesOn() throws Exception {
    String url = gateway.databaseUrl();
    // Says it is a report, has no delivery-status part.
    UUID malformed = returnDsn(("Content-Type: multipart/report; report-type=delivery-status; boundary=x\n\n--x\nContent-Type: text/plain\n\n"
        + "sorry\n--x--\n").replace("\n", "\r\n"));
    assertThat(handled(malformed)).isEqualTo("malformed|no message/delivery-status part|0|");
    UUID junk = returnDsn("Content-Type: multipart/report; report-type=delivery-status; boundary=\"\u0001\"\r\n\r\n\u0000\u00ff--\r\n:::");
    assertThat(handled(junk)).startsWith("malformed|");

    // An ENVID no row has.
    UUID unknown = returnDsn(dsn("Original-Envelope-Id: never-sent\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null));
    assertThat(handled(unknown)).isEqualTo("unmatched|no row with ENVID never-sent|0|");

    // A row that was there and is gone (deleted by retention): unmatched, like one never sent.
    UUID gone = relay("FROM:<sender@example.com> ENVID=gone-1", List.of("a@example.net"), "Subject: t");
    try (var c = dev.ledgerpost.testing.TestDatabase.connect(url); var st = c.createStatement()) {
      st.execute("DELETE FROM recipients WHERE message_id = '" + gone + "'");
      st.execute("DELETE FROM outbox WHERE message_id = '" + gone + "'");
      st.execute("DELETE FROM messages WHERE id = '" + gone + "'");
    }
    UUID late = returnDsn(dsn("Original-Envelope-Id: gone-1\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null));
    assertThat(handled(late)).isEqualTo("unmatched|no row with ENVID gone-1|0|");

    // A report about a message that arrived before ledger.retention's cut-off: expired.
    UUID old = returnDsn(dsn("Original-Envelope-Id: ancient\nArrival-Date: Mon, 1 Jan 2024 00:00:00 +0000\n", "a@example.net", "failed",
        "5.1.1", "550 5.1.1 no", null));
    assertThat(handled(old)).isEqualTo("expired|past ledger.retention: ENVID ancient|0|");

    // A message with the empty sender that is not a report (an auto-reply) is no DSN: relayed, nothing recorded.
    UUID autoReply = returnDsn("Subject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nAway.");
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + autoReply + "'")).isEqualTo("SENT");

    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'SENT'")).as("every DSN relayed").isEqualTo(6);
    // The intake is still taking mail, and the auto-reply left no row (it was handled before this message's own DSN).
    UUID after = returnDsn(dsn("Original-Envelope-Id: after\n", "a@example.net", "failed", "5.1.1", "550 5.1.1 no", null));
    assertThat(handled(after)).startsWith("unmatched|");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM tracking_dsns WHERE message_id = '" + autoReply + "'")).isZero();
    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_tracking_dsn_total{result=\"malformed\"} 2.0")
        .contains("ledgerpost_tracking_dsn_total{result=\"unmatched\"} 3.0")
        .contains("ledgerpost_tracking_dsn_total{result=\"expired\"} 1.0");
  }
}
