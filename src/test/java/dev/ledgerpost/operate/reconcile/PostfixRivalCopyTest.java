package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import dev.ledgerpost.testing.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, item 1, end to end with a real Postfix as the smarthost (docs/design.md §8.4). A gateway (a child process)
 * relays message R1 to Postfix through a proxy that keeps the final dot from Postfix, and is SIGKILLed while Postfix
 * waits for it: Postfix never queues R1, and its row stays PENDING. The client sends the message again, same Message-ID
 * and envelope but new bytes (another Date:), through a second gateway on the same ledger: R2, SENT, "queued as Q2".
 * With {@code reconcile.autoResolve: exact}, the reconcile job must not resolve R1 on Q2's log lines: Q2 is R2's (its
 * recorded reply names it), and the copy Postfix saw arrive without queueing it may be R1's own.
 */
class PostfixRivalCopyTest {
  static final String MESSAGE_ID = "<rival-1@example.com>";

  /** Postfix relays what it queues to the harness's scripted smarthost; each test starts its gateway itself. */
  @RegisterExtension
  final GatewayHarness harness = GatewayHarness.extension().manual();

  @Test
  void aPendingRowIsNotResolvedOnTheQueueIdOfTheClientsSecondCopy() throws Exception {
    String url = TestDatabase.newDatabase();
    PostfixInstance postfix = harness.closeAfter(PostfixInstance.start("rival", Map.of(
        "relayhost", "[127.0.0.1]:" + harness.downstream().port(),
        "smtpd_relay_restrictions", "permit_mynetworks, reject"), true));
    TcpProxy proxy = harness.closeAfter(TcpProxy.to("127.0.0.1", postfix.port()));
    proxy.holdFinalDots();

    // R1: the first gateway dies while Postfix waits for the final dot.
    Path dir = GatewayHarness.tempDir("child-rival-");
    String yaml = ChildGateway.config(dir, proxy.port(), url) + "node:\n  id: first\n";
    try (ChildGateway first = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      CompletableFuture<String> r1 = CompletableFuture.supplyAsync(() -> send(first.smtpPort(), "Mon, 30 Nov 2026 10:00:00 +0000"));
      Poll.until(Duration.ofSeconds(30), "the proxy to hold R1's final dot", () -> proxy.finalDotsHeld() == 1);
      assertThat(LedgerRows.string(url, "SELECT status FROM messages WHERE message_id_header = '" + MESSAGE_ID + "'"))
          .as("R1 is opened before its body goes downstream").isEqualTo("PENDING");
      Poll.until(Duration.ofSeconds(30), "Postfix's cleanup to log R1's Message-ID", () -> logLines(postfix, "message-id=" + MESSAGE_ID)
          .size() == 1);
      assertThat(first.kill()).isEqualTo(137);
      String heard = r1.get();
      assertThat(heard == null || !heard.startsWith("2")).as("R1's client heard no 2xx: %s", heard).isTrue();
    }
    Poll.until(Duration.ofSeconds(30), "Postfix to see R1's connection lost", () -> !logLines(postfix, "lost connection after").isEmpty());
    String q1 = queueIdOf(logLines(postfix, "message-id=" + MESSAGE_ID).get(0));
    assertThat(logLines(postfix, q1 + ": from=<")).as("Postfix never queued R1").isEmpty();

    // R2: the second gateway, on the same ledger; its reconcile job's clock stands an hour back until R2 is SENT.
    MutableClock clock = new MutableClock(Instant.now().minus(Duration.ofHours(1)));
    Map<String, Object> config = GatewayHarness.defaults(postfix.port());
    config.put("ledger.url", url);
    config.put("node.id", "second");
    config.put("downstream.replyTimeout", "1s");
    config.put("downstream.dataTimeout", "2s");
    config.put("reconcile.pendingAge", "4s");
    config.put("reconcile.interval", "200ms");
    config.put("reconcile.autoResolve", "exact");
    config.put("reconcile.sources", List.of(Map.of("type", "postfix-log", "name", "postfix", "path",
        postfix.dir().resolve("maillog").toString())));
    harness.begin(config, clock);
    assertThat(send(harness.smtpPort(), "Mon, 30 Nov 2026 10:00:30 +0000")).startsWith("250 ");
    String r1 = LedgerRows.string(url, "SELECT id FROM messages WHERE message_id_header = '" + MESSAGE_ID + "' AND status = 'PENDING'");
    String reply = LedgerRows.string(url, "SELECT downstream_reply FROM messages WHERE message_id_header = '" + MESSAGE_ID
        + "' AND status = 'SENT'");
    assertThat(reply).startsWith("250 ").contains("queued as ");
    String q2 = reply.substring(reply.indexOf("queued as ") + "queued as ".length()).trim();
    assertThat(q2).isNotEqualTo(q1);
    Poll.until(Duration.ofSeconds(30), "Postfix to log Q2 queued", () -> !logLines(postfix, q2 + ": from=<a@example.com>").isEmpty());
    assertThat(logLines(postfix, "message-id=" + MESSAGE_ID)).as("two copies reached Postfix").hasSize(2);

    // R1 is now old enough for the job; Q2 is the only verdict Postfix logged for this Message-ID and envelope.
    clock.advance(Duration.ofHours(1).plusSeconds(30));
    long before = harness.gateway().part(ReconcilePart.class).verticle().passes();
    Poll.until(Duration.ofSeconds(30), "ten reconcile passes with R1 a candidate", () -> harness.gateway().part(ReconcilePart.class).verticle().passes() >= before + 10);
    assertThat(LedgerRows.status(url, java.util.UUID.fromString(r1))).isEqualTo("PENDING");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE message_id = '" + r1 + "'"))
        .as("no proposal for R1 on another copy's queue id").isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resolutions WHERE message_id = '" + r1 + "'")).isZero();
    // Postfix relayed one copy: the ledger says one delivery, R2's.
    Poll.until(Duration.ofSeconds(60), "Postfix to relay R2 to the next hop", () -> harness.downstream().messages().size() == 1);
    assertThat(harness.downstream().messages().get(0).text()).contains("Date: Mon, 30 Nov 2026 10:00:30 +0000");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE message_id_header = '" + MESSAGE_ID
        + "' AND status IN ('SENT', 'RESOLVED_DELIVERED')")).isEqualTo(1);
  }

  /** One copy of the message, with this Date:; a body large enough that Postfix's smtpd passes its headers on at once. */
  private static String send(int port, String date) {
    try (SmtpTestClient c = new SmtpTestClient(port)) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Message-ID: " + MESSAGE_ID + "\r\nDate: " + date
          + "\r\nFrom: a@example.com\r\nSubject: twice\r\n\r\n" + "The same words each time.\r\n".repeat(4000));
    } catch (java.io.IOException e) {
      return "connection ended: " + e.getMessage();
    }
  }

  private static List<String> logLines(PostfixInstance postfix, String text) {
    return postfix.log().lines().filter(l -> l.contains(text)).toList();
  }

  /** "Dec 03 19:00:00 rival.test postfix/cleanup[123]: 4F1A2B3C4D: message-id=<...>" -> 4F1A2B3C4D. */
  private static String queueIdOf(String line) {
    String before = line.substring(0, line.indexOf(": message-id="));
    return before.substring(before.lastIndexOf(' ') + 1);
  }
}
