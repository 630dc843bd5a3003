package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.SmtpTestClient;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Downstream tracking against a real Postfix as the smarthost (docs/design.md §8.13): the gateway relays to Postfix,
 * which relays to a next hop that accepts one recipient and refuses the other with 550 5.1.1. The follower reads
 * Postfix's own log (its maillog_file) and records a delivered fact for the first and a bounced one, classified
 * invalid_recipient, for the second, matched by the queue id of Postfix's 250; the ledger row stays SENT. The bounce
 * puts the address on the suppression list (docs/design.md §8.8): the next message to it is refused at RCPT with the
 * suppression reply naming the ledger row, and removing the entry lets it through.
 */
class TrackingPostfixTest {
  static PostfixInstance postfix;

  @RegisterExtension
  static final GatewayHarness gateway = TrackingPostfixGateway.extension("tracking", p -> postfix = p)
      .with("suppression.refreshInterval", "200ms");

  @Test
  void anAcceptedRecipientIsDeliveredAndARefusedOneBouncedFromPostfixsOwnLog() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("ok@example.net", "gone@example.net"),
          "Subject: tracked\r\nFrom: a@example.com\r\n\r\nhello\r\n")).startsWith("250");
    }
    String url = gateway.databaseUrl();
    String reply = LedgerRows.string(url, "SELECT downstream_reply FROM messages");
    assertThat(reply).as("Postfix's 250 names its queue id").contains("queued as ");
    String queueId = reply.substring(reply.indexOf("queued as ") + "queued as ".length()).trim();

    Poll.until(Duration.ofSeconds(60), "a fact for each recipient", () -> LedgerRows.count(url, "SELECT count(*) FROM delivery_facts") >= 2);
    assertThat(LedgerRows.string(url, "SELECT state || ' ' || coalesce(category, '-') || ' ' || dsn || ' ' || queue_id || ' ' || remote_host"
        + " FROM delivery_facts WHERE idx = 0")).isEqualTo("delivered - 2.0.0 " + queueId + " 127.0.0.1[127.0.0.1]:" + gateway.downstream().port());
    assertThat(LedgerRows.string(url, "SELECT state || ' ' || category || ' ' || rule || ' ' || dsn || ' ' || queue_id"
        + " FROM delivery_facts WHERE idx = 1")).isEqualTo("bounced invalid_recipient invalid-codes 5.1.1 " + queueId);
    assertThat(LedgerRows.string(url, "SELECT reply FROM delivery_facts WHERE idx = 1")).contains("said: 550 5.1.1 <gone@example.net>");
    assertThat(LedgerRows.string(url, "SELECT evidence FROM delivery_facts WHERE idx = 1")).contains("postfix/smtp").contains("status=bounced");
    assertThat(LedgerRows.string(url, "SELECT status FROM messages")).as("our hop's status stays what it was").isEqualTo("SENT");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type IN ('recipient.delivered', 'recipient.bounced')")).isEqualTo(2);
    // Postfix's own bounce message to the sender has a queue id of its own, never ours: nothing more is recorded.
    Poll.until(Duration.ofSeconds(60), "Postfix's bounce to the sender relayed to the next hop", () -> gateway.downstream().messages().size() >= 2);
    Poll.until(Duration.ofSeconds(10), "the follower past the bounce's lines", () -> LedgerRows.count(url,
        "SELECT position FROM tracking_log_positions") == java.nio.file.Files.size(postfix.dir().resolve("maillog")));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts")).isEqualTo(2);

    // The bounce put the address on the list, naming the row and the remote reply.
    String id = LedgerRows.string(url, "SELECT id::text FROM messages ORDER BY id LIMIT 1");
    assertThat(LedgerRows.string(url, "SELECT address || ' ' || scope || ' ' || source || ' ' || category || ' ' || message_id"
        + " FROM suppressions")).isEqualTo("gone@example.net global bounce invalid_recipient " + id);
    assertThat(LedgerRows.string(url, "SELECT reply FROM suppressions")).contains("said: 550 5.1.1 <gone@example.net>");
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO client.test")).startsWith("250");
      String[] last = new String[1];
      boolean refused = Poll.within(Duration.ofSeconds(10), () -> {
        assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("250");
        last[0] = c.command("RCPT TO:<gone@example.net>");
        assertThat(c.command("RSET")).startsWith("250");
        return last[0].startsWith("550");
      });
      assertThat(refused).as(last[0]).isTrue();
      assertThat(last[0]).startsWith("550 5.1.1 <gone@example.net> suppressed since ").endsWith(" (ledger " + id + ")")
          .contains(": bounced (invalid_recipient, 5.1.1) by 127.0.0.1[127.0.0.1]:" + gateway.downstream().port());
      var removed = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
              "http://127.0.0.1:" + gateway.httpPort() + "/api/v1/suppressions?address=gone%40example.net&scope=global"))
          .timeout(Duration.ofSeconds(10)).header("Authorization", "Bearer " + gateway.gateway().adminToken())
          .header("X-Operator", "ops").DELETE().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<gone@example.net>")).as("Postfix takes it: it queues before it asks the next hop")
          .startsWith("250");
      assertThat(c.command("RSET")).startsWith("250");
    }
  }
}
