package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real Postfix's DSN as the second source (docs/design.md §8.13, "Returned DSNs"): the gateway relays a message with
 * an ENVID to Postfix, whose next hop refuses one recipient with 550 5.1.1 after Postfix queued it; Postfix bounces it
 * and sends its DSN to the sender, which its next hop receives. That DSN, as Postfix wrote it, is then returned to the
 * gateway's SMTP intake with the empty sender (as the sender's domain routed back to the gateway would): it is relayed
 * as any message, matched by its Original-Envelope-Id, and the refused recipient has one bounce from Postfix's log and
 * one from the DSN, both invalid_recipient. (The gateway's relay of the DSN goes to Postfix too, and on to the next
 * hop; TrackingPostfixLoopTest routes the sender's domain straight back to the gateway, where the loop guard stops it.)
 */
class TrackingPostfixDsnTest {
  static PostfixInstance postfix;

  @RegisterExtension
  static final GatewayHarness gateway = TrackingPostfixGateway.extension("tracking-dsn", p -> postfix = p);

  @Test
  void postfixsOwnDsnReturnedThroughTheIntakeIsASecondFactOfTheBounce() throws Exception {
    String id;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO client.test")).as("Postfix offers DSN, so the gateway does").contains("250-DSN");
      assertThat(c.command("MAIL FROM:<a@example.com> ENVID=trk+2B1")).startsWith("250");
      assertThat(c.command("RCPT TO:<ok@example.net>")).startsWith("250");
      assertThat(c.command("RCPT TO:<gone@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      String reply = c.command("Subject: tracked\r\nFrom: a@example.com\r\nMessage-ID: <trk-1@example.com>\r\n\r\nhello\r\n.");
      assertThat(reply).startsWith("250");
      id = reply.substring(reply.indexOf("queued as ") + 10, reply.indexOf("queued as ") + 46);
    }
    String url = gateway.databaseUrl();
    Poll.until(Duration.ofSeconds(60), "the log's facts", () -> LedgerRows.count(url,
        "SELECT count(*) FROM delivery_facts WHERE source = 'postfix-log'") >= 2);

    Poll.until(Duration.ofSeconds(60), "Postfix's DSN to the sender at its next hop", () -> gateway.downstream().messages().stream()
        .anyMatch(m -> m.mailFrom().isEmpty()));
    ScriptedSmtpServer.Received bounce = gateway.downstream().messages().stream().filter(m -> m.mailFrom().isEmpty()).findFirst().orElseThrow();
    assertThat(bounce.text()).contains("report-type=delivery-status").contains("Original-Envelope-Id: trk+1");

    String dsn;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO mailer-daemon.test")).startsWith("250");
      assertThat(c.command("MAIL FROM:<>")).startsWith("250");
      assertThat(c.command("RCPT TO:<a@example.com>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.sendBytes(SmtpTestClient.dotStuffed(bounce.data()));
      String reply = c.command((bounce.text().endsWith("\r\n") ? "" : "\r\n") + ".");
      assertThat(reply).as("the DSN is taken as any message").startsWith("250");
      dsn = reply.substring(reply.indexOf("queued as ") + 10, reply.indexOf("queued as ") + 46);
    }
    Poll.until(Duration.ofSeconds(30), "the DSN read", () -> LedgerRows.count(url,
        "SELECT count(*) FROM tracking_dsns WHERE message_id = '" + dsn + "'") == 1);
    assertThat(LedgerRows.string(url, "SELECT result || ' ' || reason || ' ' || facts || ' ' || matched_message_id FROM tracking_dsns"))
        .isEqualTo("matched by ENVID 1 " + id);
    assertThat(LedgerRows.string(url, "SELECT string_agg(source || ' ' || state || ' ' || category || ' ' || dsn, ', ' ORDER BY source)"
        + " FROM delivery_facts WHERE idx = 1")).isEqualTo("dsn bounced invalid_recipient 5.1.1, postfix-log bounced invalid_recipient 5.1.1");
    assertThat(LedgerRows.string(url, "SELECT reply FROM delivery_facts WHERE idx = 1 AND source = 'dsn'")).contains("550 5.1.1 <gone@example.net>");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts WHERE idx = 0 AND source = 'dsn'"))
        .as("Postfix reports only the failure").isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.bounced' AND message_id = '" + id + "'"))
        .as("one event per fact").isEqualTo(2);
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("SENT");
    assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE id = '" + dsn + "'")).as("the DSN relayed on").isEqualTo("SENT");
  }
}
