package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * tracking.relayDsns false (docs/design.md §8.13, "Returned DSNs"): a returned DSN that matches one of our rows is
 * answered 250, recorded (its fact, its tracking_dsns row, its own ledger row CAPTURED with its bytes) and never reaches
 * the smarthost; an unmatched DSN and a message with the empty sender that is no report are relayed as before.
 */
class TrackingDsnKeptTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  private static final Pattern QUEUED = Pattern.compile("queued as ([0-9a-f-]{36})");
  private static final Pattern KEPT = Pattern.compile("^250 2\\.0\\.0 DSN recorded by tracking \\(ledger ([0-9a-f-]{36})\\), not relayed: (.*)$");

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("tracking.relayDsns", false)
      .script(g -> new DsnSmarthost() {});

  private String returnDsn(String message) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("", List.of("sender@example.com"), message).strip();
    }
  }

  @Test
  void aMatchedDsnIsRecordedAndKeptNeverRelayedAndTheOthersGoOn() throws Exception {
    String url = gateway.databaseUrl();
    UUID id;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      Matcher m = QUEUED.matcher(c.sendMail("sender@example.com", List.of("a@example.net", "b@example.org"),
          "Subject: t\r\nMessage-ID: <kept-1@app.example.com>\r\n\r\nbody\r\n"));
      assertThat(m.find()).isTrue();
      id = UUID.fromString(m.group(1));
    }
    assertThat(gateway.downstream().messages()).hasSize(1);

    String returned = TrackingDsnTest.dsn("", "b@example.org", "failed", "5.1.1",
        "550 5.1.1 <b@example.org>: Recipient address rejected: User unknown", "<kept-1@app.example.com>");
    String reply = returnDsn(returned);
    Matcher m = KEPT.matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    UUID dsn = UUID.fromString(m.group(1));
    assertThat(m.group(2)).isEqualTo("it reports on ledger " + id + " (tracking.relayDsns false)");

    Poll.until(WAIT, "the kept DSN recorded", () -> LedgerRows.count(url, "SELECT count(*) FROM tracking_dsns WHERE message_id = '"
        + dsn + "'") == 1);
    assertThat(LedgerRows.string(url, "SELECT result || '|' || reason || '|' || facts || '|' || matched_message_id || '|' || relayed"
        + " FROM tracking_dsns WHERE message_id = '" + dsn + "'")).isEqualTo("matched|by Message-ID|1|" + id + "|false");
    assertThat(LedgerRows.string(url, "SELECT source || ' ' || state || ' ' || category FROM delivery_facts WHERE message_id = '" + id + "'"))
        .isEqualTo("dsn bounced invalid_recipient");
    // The DSN's own row: accepted and kept, not relayed, and its reply says why.
    assertThat(LedgerRows.string(url, "SELECT status || '|' || route || '|' || mail_from || '|' || downstream_reply || '|' || (sent_sha256 IS NULL)"
        + " FROM messages WHERE id = '" + dsn + "'"))
        .isEqualTo("CAPTURED|capture||250 2.0.0 DSN kept by tracking, not relayed: it reports on ledger " + id + " (tracking.relayDsns false)|true");
    assertThat(LedgerRows.string(url, "SELECT string_agg(status, ',') FROM recipients WHERE message_id = '" + dsn + "'")).isEqualTo("CAPTURED");
    assertThat(LedgerRows.string(url, "SELECT convert_from(body, 'UTF8') FROM captures WHERE message_id = '" + dsn + "'"))
        .as("its bytes kept, readable as a capture's").contains("report-type=delivery-status").contains("Final-Recipient: rfc822; b@example.org");
    assertThat(gateway.downstream().messages()).as("the smarthost never got the DSN").hasSize(1);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);

    // A DSN about nothing of ours is relayed as before, and so is an auto-reply.
    String unmatched = returnDsn(TrackingDsnTest.dsn("Original-Envelope-Id: never-sent\n", "a@example.net", "failed", "5.1.1",
        "550 5.1.1 no", null));
    assertThat(unmatched).startsWith("250 2.0.0 Ok: queued as ");
    String autoReply = returnDsn("Subject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nAway.");
    assertThat(autoReply).startsWith("250 2.0.0 Ok: queued as ");
    assertThat(gateway.downstream().messages()).hasSize(3);
    assertThat(gateway.downstream().messages().get(1).mailFrom()).isEmpty();
    Matcher u = QUEUED.matcher(unmatched);
    assertThat(u.find()).isTrue();
    Poll.until(WAIT, "the relayed DSN recorded", () -> LedgerRows.count(url, "SELECT count(*) FROM tracking_dsns WHERE message_id = '"
        + u.group(1) + "'") == 1);
    assertThat(LedgerRows.string(url, "SELECT result || '|' || relayed FROM tracking_dsns WHERE message_id = '" + u.group(1) + "'"))
        .isEqualTo("unmatched|true");

    // The matched DSN again (nothing relayed it, so no loop): kept again, no second fact.
    Matcher again = KEPT.matcher(returnDsn(returned));
    assertThat(again.find()).isTrue();
    Poll.until(WAIT, "the second one recorded", () -> LedgerRows.count(url, "SELECT count(*) FROM tracking_dsns WHERE message_id = '"
        + again.group(1) + "'") == 1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts")).isEqualTo(1);
    assertThat(gateway.downstream().messages()).hasSize(3);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'CAPTURED'")).isEqualTo(2);
  }
}
