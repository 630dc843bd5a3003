package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 30's test with a real Postfix as the smarthost (docs/design.md §8.13): Postfix relays by a transport map to three
 * sinks chosen by recipient domain: ok.test accepts; gone.test refuses RCPT with 550 5.1.1 (after Postfix queued the
 * message, so Postfix bounces it and sends its DSN to the sender); slow.test answers 451 twice, then accepts. The
 * sender's domain, back.test, is routed back to the gateway's SMTP port, so Postfix's DSN arrives through the intake,
 * and the gateway's relay of it (tracking.relayDsns true) goes to Postfix and comes round again: the loop guard keeps
 * that second arrival, and the DSN has exactly two ledger rows, the relayed one and the kept one.
 */
class TrackingPostfixLoopTest {
  static PostfixInstance postfix;
  static ScriptedSmtpServer refusing;
  static ScriptedSmtpServer slow;
  static final AtomicInteger slowRcpts = new AtomicInteger();
  private static final Pattern QUEUED = Pattern.compile("queued as ([0-9a-f-]{36})");

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("tracking.pollInterval", "100ms")
      .with("suppression.refreshInterval", "200ms")
      .configure((g, o) -> {
        refusing = GatewayHarness.await(ScriptedSmtpServer.start(g.vertx(), new ScriptedSmtpServer.Script() {
          @Override
          public String rcpt(String to) {
            return "550 5.1.1 <" + to + ">: Recipient address rejected: User unknown";
          }
        }));
        slow = GatewayHarness.await(ScriptedSmtpServer.start(g.vertx(), new ScriptedSmtpServer.Script() {
          @Override
          public String rcpt(String to) {
            return slowRcpts.incrementAndGet() <= 2 ? "451 4.2.0 <" + to + ">: try again later" : "250 2.1.5 Ok";
          }
        }));
        postfix = g.closeAfter(PostfixInstance.start("tracking-loop", Map.of(
            "smtpd_relay_restrictions", "permit_mynetworks, reject",
            "queue_run_delay", "1s",
            "minimal_backoff_time", "1s",
            "maximal_backoff_time", "1s"), true));
        o.put("downstream.port", postfix.port());
        o.put("tracking.postfixLog", postfix.dir().resolve("maillog").toString());
      })
      .afterStart(g -> {
        // The gateway's port is known only now: the sender's domain goes back to it. The map is Postfix's from the reload.
        Path transport = postfix.dir().resolve("transport");
        Files.writeString(transport, "ok.test smtp:[127.0.0.1]:" + g.downstream().port() + "\n"
            + "gone.test smtp:[127.0.0.1]:" + refusing.port() + "\n"
            + "slow.test smtp:[127.0.0.1]:" + slow.port() + "\n"
            + "back.test smtp:[127.0.0.1]:" + g.smtpPort() + "\n");
        Files.writeString(postfix.dir().resolve("main.cf"), "transport_maps = texthash:" + transport + "\n",
            java.nio.file.StandardOpenOption.APPEND);
        postfix.reload();
      });

  @Test
  void deliveredBouncedTwiceOverDeferredThenDeliveredAndTheDsnsLoopStopped() throws Exception {
    String url = gateway.databaseUrl();
    String id;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO client.test")).contains("250-DSN");
      assertThat(c.command("MAIL FROM:<a@back.test> ENVID=loop-1")).startsWith("250");
      for (String to : List.of("ok@ok.test", "gone@gone.test", "slow@slow.test")) {
        assertThat(c.command("RCPT TO:<" + to + ">")).as(to).startsWith("250");
      }
      assertThat(c.command("DATA")).startsWith("354");
      String reply = c.command("Subject: three\r\nFrom: a@back.test\r\nMessage-ID: <loop-1@back.test>\r\n\r\nhello\r\n.");
      Matcher m = QUEUED.matcher(reply);
      assertThat(m.find()).as(reply).isTrue();
      id = m.group(1);
    }
    String of = " FROM delivery_facts WHERE message_id = '" + id + "'";

    // The third recipient: deferred twice (451 at RCPT), then delivered, from Postfix's log.
    Poll.until(Duration.ofSeconds(25), "slow@ delivered after two deferrals", () -> LedgerRows.count(url,
        "SELECT count(*)" + of + " AND idx = 2 AND state = 'delivered'") == 1);
    assertThat(LedgerRows.string(url, "SELECT string_agg(state || ' ' || dsn, ', ' ORDER BY id)" + of + " AND idx = 2"))
        .isEqualTo("deferred 4.2.0, deferred 4.2.0, delivered 2.0.0");
    assertThat(LedgerRows.string(url, "SELECT reply" + of + " AND idx = 2 AND state = 'deferred' ORDER BY id LIMIT 1"))
        .contains("451 4.2.0 <slow@slow.test>: try again later");
    // The first: delivered.
    assertThat(LedgerRows.string(url, "SELECT string_agg(state || ' ' || source, ', ')" + of + " AND idx = 0"))
        .isEqualTo("delivered postfix-log");

    // The second: bounced / invalid_recipient from the log and again from Postfix's DSN, one fact per source.
    Poll.until(Duration.ofSeconds(20), "the DSN's fact", () -> LedgerRows.count(url, "SELECT count(*)" + of + " AND source = 'dsn'") == 1);
    assertThat(LedgerRows.string(url, "SELECT string_agg(source || ' ' || state || ' ' || category || ' ' || dsn, ', ' ORDER BY source)"
        + of + " AND idx = 1")).isEqualTo("dsn bounced invalid_recipient 5.1.1, postfix-log bounced invalid_recipient 5.1.1");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM suppressions")).as("one entry for the two facts").isEqualTo(1);
    assertThat(LedgerRows.string(url, "SELECT address || ' ' || category || ' ' || message_id FROM suppressions"))
        .isEqualTo("gone@gone.test invalid_recipient " + id);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.bounced' AND message_id = '" + id + "'"))
        .isEqualTo(2);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.deferred' AND message_id = '" + id + "'"))
        .isEqualTo(2);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'recipient.delivered' AND message_id = '" + id + "'"))
        .isEqualTo(2);

    // The DSN's loop: relayed once (to Postfix, which routed it back), kept the second time; then Postfix's queue is empty.
    Poll.until(Duration.ofSeconds(20), "the DSN's second arrival kept", () -> LedgerRows.count(url,
        "SELECT count(*) FROM tracking_dsns WHERE result = 'looped'") == 1);
    Poll.until(Duration.ofSeconds(20), "Postfix's queue empty", () -> postfix.queued() == 0);
    assertThat(LedgerRows.string(url, "SELECT string_agg(status || ' ' || route, ', ' ORDER BY id) FROM messages WHERE mail_from = ''"))
        .as("the DSN's rows: the one relayed, the one kept, no more").isEqualTo("SENT " + LedgerRows.string(url,
            "SELECT route FROM messages WHERE id = '" + id + "'") + ", CAPTURED capture");
    String first = LedgerRows.string(url, "SELECT id::text FROM messages WHERE mail_from = '' AND status = 'SENT'");
    assertThat(LedgerRows.string(url, "SELECT string_agg(result || ' ' || relayed || ' ' || facts || ' ' || coalesce(reason, ''), ', '"
        + " ORDER BY message_id) FROM tracking_dsns")).as("the second arrival is the loop's: after the first relay settled, or while"
        + " it was still under way (Postfix can route it back that quickly)").isIn(
            "matched true 1 by ENVID, looped false 0 the same report was relayed before as " + first,
            "matched true 1 by ENVID, looped false 0 the same report arrived again while its relay was under way");
    assertThat(LedgerRows.string(url, "SELECT downstream_reply FROM messages WHERE mail_from = '' AND status = 'CAPTURED'")).isIn(
        "250 2.0.0 DSN kept by tracking, not relayed again: the same report was relayed before as " + first,
        "250 2.0.0 DSN kept by tracking, not relayed again: the same report arrived again while its relay was under way");
    assertThat(postfix.log()).contains("DSN recorded by tracking (ledger ");

    // A new message to the bounced address is refused at RCPT with the suppression reply naming the row; removing the
    // entry lets it through.
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.command("EHLO client.test")).startsWith("250");
      String[] last = new String[1];
      boolean refused = Poll.within(Duration.ofSeconds(10), () -> {
        assertThat(c.command("MAIL FROM:<a@back.test>")).startsWith("250");
        last[0] = c.command("RCPT TO:<gone@gone.test>");
        assertThat(c.command("RSET")).startsWith("250");
        return last[0].startsWith("550");
      });
      assertThat(refused).as(last[0]).isTrue();
      assertThat(last[0]).startsWith("550 5.1.1 <gone@gone.test> suppressed since ").endsWith(" (ledger " + id + ")")
          .contains(": bounced (invalid_recipient, 5.1.1)");
      var removed = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
              "http://127.0.0.1:" + gateway.httpPort() + "/api/v1/suppressions?address=gone%40gone.test&scope=global"))
          .timeout(Duration.ofSeconds(10)).header("Authorization", "Bearer " + gateway.gateway().adminToken())
          .header("X-Operator", "ops").DELETE().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(removed.statusCode()).as(removed.body()).isEqualTo(200);
      assertThat(c.command("MAIL FROM:<a@back.test>")).startsWith("250");
      assertThat(c.command("RCPT TO:<gone@gone.test>")).as("Postfix takes it: it queues before it asks the next hop").startsWith("250");
      assertThat(c.command("RSET")).startsWith("250");
    }
  }
}
