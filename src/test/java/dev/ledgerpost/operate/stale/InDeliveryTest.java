package dev.ledgerpost.operate.stale;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, item 5 (docs/design.md §8.1, §9.2): a row whose body is at the smarthost and whose final reply has not come
 * yet is PENDING and in delivery. However old it looks by the stale watch's clock, it is not raised, not listed as
 * needing attention (so no operator resolves a message that is then delivered), neither on the node that delivers it
 * nor on another node's stale watch, which learns it from that node's heartbeat. The smarthost holds its reply to the
 * final dot until the test lets it answer.
 */
class InDeliveryTest {
  static final String STALE_LINE = "CRITICAL audit_event=stale_pending";
  final MutableClock clock = new MutableClock(Instant.now());
  /** The smarthost's reply to the final dot, completed by the test. */
  final Promise<String> reply = Promise.promise();

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("stale.scanInterval", "100ms")
      .with("stale.threshold", "10m").with("downstream.replyTimeout", "2m").with("downstream.dataTimeout", "5m")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return reply.future();
        }
      })
      .clock(clock);

  @Test
  void aRowWhoseReplyIsAwaitedIsNotRaisedNorListedHowEverOldItLooks() throws Exception {
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      CompletableFuture<String> client = CompletableFuture.supplyAsync(() -> send(gateway.smtpPort(), "<in-delivery-1@example.com>"));
      UUID id = awaitAtTheSmarthost(gateway, "<in-delivery-1@example.com>");

      clock.advance(Duration.ofMinutes(11)); // past stale.threshold by the watch's clock, as a slow smarthost would make it
      long scans = gauges.scans();
      Poll.until(Duration.ofSeconds(10), "three scans", () -> gauges.scans() >= scans + 3);
      assertThat(gauges.pendingMessages()).isEqualTo(1);
      assertThat(gauges.oldestPendingAgeSeconds()).isGreaterThanOrEqualTo(600);
      assertThat(gauges.stalePendingMessages()).isZero();
      assertThat(audit.errorsContaining(STALE_LINE)).isEmpty();
      assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM stale_raises")).isZero();
      assertThat(new JsonObject(gateway.get("/api/v1/attention").body()).getLong("matching")).isZero();
      assertThat(new JsonObject(gateway.get("/api/v1/messages/stale").body()).getLong("stale")).isZero();

      reply.complete("250 2.0.0 Ok: queued as LATE1");
      assertThat(client.get()).startsWith("250 ");
      Poll.until(Duration.ofSeconds(10), "settled SENT", () -> "SENT".equals(LedgerRows.status(gateway.databaseUrl(), id)));
      assertThat(audit.errorsContaining(STALE_LINE)).isEmpty();
    }
  }

  @Test
  void anotherNodesStaleWatchLeavesARowInDeliveryAloneWhileThatNodeLives() throws Exception {
    // This node (the harness's gateway) leads the stale watch; the second delivers the message and says so in its heartbeat.
    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("ledger.url", gateway.databaseUrl());
    config.put("node.id", "deliverer");
    // A Vert.x of its own, as another process has: one bus would answer retry.held from either gateway's retry part.
    io.vertx.core.Vertx other = io.vertx.core.Vertx.vertx();
    GatewayHarness deliverer = GatewayHarness.start(other, config);
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT jobs::text FROM nodes WHERE id = 'deliverer'")).doesNotContain("stale");
      CompletableFuture<String> client = CompletableFuture.supplyAsync(() -> send(deliverer.smtpPort(), "<in-delivery-2@example.com>"));
      UUID id = awaitAtTheSmarthost(gateway, "<in-delivery-2@example.com>");
      // A heartbeat of the deliverer that began after the body reached the smarthost (heartbeats are 1 s apart).
      String atSmarthost = LedgerRows.string(gateway.databaseUrl(), "SELECT now()::text");
      Poll.until(Duration.ofSeconds(10), "a heartbeat of the deliverer since", () -> "t".equals(LedgerRows.string(gateway.databaseUrl(),
          "SELECT heartbeat_at > '" + atSmarthost + "'::timestamptz + interval '1200 milliseconds' FROM nodes WHERE id = 'deliverer'")));

      StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
      clock.advance(Duration.ofMinutes(11));
      long scans = gauges.scans();
      Poll.until(Duration.ofSeconds(10), "three scans of the leader", () -> gauges.scans() >= scans + 3);
      assertThat(gauges.stalePendingMessages()).isZero();
      assertThat(audit.errorsContaining(STALE_LINE)).isEmpty();
      assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM stale_raises WHERE message_id = '" + id + "'")).isZero();
      assertThat(new JsonObject(gateway.get("/api/v1/attention").body()).getLong("matching")).isZero();

      reply.complete("250 2.0.0 Ok: queued as LATE2");
      assertThat(client.get()).startsWith("250 ");
      Poll.until(Duration.ofSeconds(10), "settled SENT", () -> "SENT".equals(LedgerRows.status(gateway.databaseUrl(), id)));
    } finally {
      deliverer.close();
      GatewayHarness.await(other.close());
    }
  }

  /** The row of this message once its body is at the smarthost, which holds its reply; the row is PENDING then. */
  private static UUID awaitAtTheSmarthost(GatewayHarness g, String messageId) throws Exception {
    Poll.until(Duration.ofSeconds(30), messageId + " at the smarthost", () -> g.downstream().messages().stream()
        .anyMatch(m -> m.text().contains("Message-ID: " + messageId)));
    String id = LedgerRows.string(g.databaseUrl(), "SELECT id FROM messages WHERE message_id_header = '" + messageId + "'");
    assertThat(LedgerRows.status(g.databaseUrl(), UUID.fromString(id))).isEqualTo("PENDING");
    return UUID.fromString(id);
  }

  private static String send(int port, String messageId) {
    try (SmtpTestClient c = new SmtpTestClient(port)) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Message-ID: " + messageId + "\r\nSubject: slow\r\n\r\nbody\r\n");
    } catch (java.io.IOException e) {
      return "connection ended: " + e.getMessage();
    }
  }
}
