package dev.ledgerpost.operate.stale;

import dev.ledgerpost.relay.retry.RetryPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LockingSmarthost;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * docs/contract.md §3.3 invariant 5 with a clock the test moves: a PENDING row past the threshold shows up in the
 * gauges, the log (once per period, however many scans), the outbox and the API, and an operator
 * closes it with an audit row. The gateway itself never changes its outcome.
 */
class StaleWatchTest {
  static final String STALE_LINE = "CRITICAL audit_event=stale_pending";

  final MutableClock clock = new MutableClock(Instant.now().truncatedTo(ChronoUnit.SECONDS));
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("stale.scanInterval", "100ms")
      // The stale watch's period as these tests count it; it must outlast a delivery (downstream timeouts).
      .with("stale.threshold", "10m").with("downstream.replyTimeout", "2m").with("downstream.dataTimeout", "5m")
      .with("ledger.lockTimeout", "250ms")
      .clock(clock);
  final LockingSmarthost smarthost = gateway.locking(gateway::databaseUrl);

  @Test
  void aStaleRowIsRaisedOncePerPeriodShownInGaugesAndApiAndClosedOnlyByAnOperator() throws Exception {
    String url = gateway.databaseUrl();
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    UUID id = UUID.randomUUID();
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      LedgerRows.insert(url, id, "PENDING", "PENDING", clock.instant(), "<stale@example.com>");
      Poll.until(Duration.ofSeconds(10), "pending gauge", () -> gauges.pendingMessages() == 1);
      assertThat(gauges.stalePendingMessages()).isZero();
      assertThat(gauges.oldestPendingAgeSeconds()).isZero();

      clock.advance(Duration.ofMinutes(11));
      Poll.until(Duration.ofSeconds(10), "first raise", () -> audit.errorsContaining(STALE_LINE).size() == 1);
      assertThat(audit.errorsContaining(STALE_LINE).get(0))
          .contains("message_id=" + id, "msg_id=<stale@example.com>", "age_seconds=660", "raise=1");
      long scans = gauges.scans();
      Poll.until(Duration.ofSeconds(10), "five more scans", () -> gauges.scans() >= scans + 5);
      assertThat(audit.errorsContaining(STALE_LINE)).as("once per period, not once per scan").hasSize(1);
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.stale'")).isEqualTo(1);
      assertThat(LedgerRows.string(url, "SELECT event_id FROM outbox WHERE type = 'message.stale'")).isEqualTo(id + ":stale:1");
      assertThat(gauges.stalePendingMessages()).isEqualTo(1);
      assertThat(gauges.pendingMessages()).isEqualTo(1);
      assertThat(gauges.oldestPendingAgeSeconds()).isEqualTo(660);

      HttpResponse<String> list = gateway.get("/api/v1/messages/stale");
      assertThat(list.statusCode()).isEqualTo(200);
      JsonObject body = new JsonObject(list.body());
      assertThat(body.getLong("stale")).isEqualTo(1);
      assertThat(body.getLong("thresholdSeconds")).isEqualTo(600);
      JsonObject item = body.getJsonArray("items").getJsonObject(0);
      assertThat(item.getString("id")).isEqualTo(id.toString());
      assertThat(item.getLong("ageSeconds")).isEqualTo(660);
      assertThat(item.getInteger("staleRaises")).isEqualTo(1);

      clock.advance(Duration.ofMinutes(10));
      Poll.until(Duration.ofSeconds(10), "second raise, one period later", () -> audit.errorsContaining(STALE_LINE).size() == 2);
      assertThat(audit.errorsContaining(STALE_LINE).get(1)).contains("age_seconds=1260", "raise=2");
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE event_id = '" + id + ":stale:2'")).isEqualTo(1);
      assertThat(LedgerRows.status(url, id)).as("never changed automatically").isEqualTo("PENDING");

      HttpResponse<String> resolved = gateway.post("/api/v1/messages/" + id + "/resolution",
          "{\"outcome\": \"NOT_DELIVERED\", \"note\": \"smarthost log has no trace of it\"}", "X-Operator", "alice");
      assertThat(resolved.statusCode()).isEqualTo(200);
      JsonObject r = new JsonObject(resolved.body());
      assertThat(r.getString("status")).isEqualTo("RESOLVED_NOT_DELIVERED");
      assertThat(r.getString("previousStatus")).isEqualTo("PENDING");
      assertThat(r.getInteger("version")).isEqualTo(2);
      assertThat(LedgerRows.string(url, "SELECT operator || '|' || outcome || '|' || note FROM resolutions WHERE message_id = '"
          + id + "'")).isEqualTo("alice|NOT_DELIVERED|smarthost log has no trace of it");
      assertThat(LedgerRows.string(url, "SELECT status FROM recipients WHERE message_id = '" + id + "'"))
          .isEqualTo("RESOLVED_NOT_DELIVERED");
      assertThat(LedgerRows.string(url, "SELECT event_id FROM outbox WHERE type = 'message.resolved'")).isEqualTo(id + ":2");

      HttpResponse<String> again = gateway.post("/api/v1/messages/" + id + "/resolution",
          "{\"outcome\": \"DELIVERED\", \"note\": \"second thoughts\"}", "X-Operator", "bob");
      assertThat(again.statusCode()).isEqualTo(409);
      assertThat(again.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      JsonObject problem = new JsonObject(again.body());
      assertThat(problem.getInteger("status")).isEqualTo(409);
      assertThat(problem.getString("messageStatus")).isEqualTo("RESOLVED_NOT_DELIVERED");
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM resolutions")).isEqualTo(1);

      Poll.until(Duration.ofSeconds(10), "gauges follow", () -> gauges.pendingMessages() == 0 && gauges.stalePendingMessages() == 0);
      assertThat(new JsonObject(gateway.get("/api/v1/messages/stale").body()).getJsonArray("items")).isEmpty();
      assertThat(audit.errorsContaining(STALE_LINE)).hasSize(2);
    }
  }

  @Test
  void aPendingRowWhoseOutcomeTheRetryPartHoldsIsNotRaised() throws Exception {
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    smarthost.lockWith(url -> TableLock.acquire(url, "recipients")); // the settle cannot write; the stale watch never reads recipients
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit"); SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("a@example.com", List.of("b@example.net"), "Subject: held\r\n\r\nbody");
      assertThat(reply).startsWith("250 2.0.0");
      // The reply waits for the journal; the hand-over to the retry part lands on its own context.
      Poll.until(Duration.ofSeconds(10), "held by the retry part", () -> gateway.gateway().part(RetryPart.class).stats().held() == 1);

      clock.advance(Duration.ofMinutes(11));
      long scans = gauges.scans();
      Poll.until(Duration.ofSeconds(10), "three scans", () -> gauges.scans() >= scans + 3);
      assertThat(gauges.pendingMessages()).isEqualTo(1);
      assertThat(gauges.oldestPendingAgeSeconds()).isGreaterThanOrEqualTo(600);
      assertThat(gauges.stalePendingMessages()).isZero();
      assertThat(audit.errorsContaining(STALE_LINE)).isEmpty();
      JsonObject list = new JsonObject(gateway.get("/api/v1/messages/stale").body());
      assertThat(list.getLong("pending")).isEqualTo(1);
      assertThat(list.getJsonArray("items")).isEmpty();

      smarthost.lock().release();
      Poll.until(Duration.ofSeconds(10), "settled by the retry part", () ->
          LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE status = 'SENT'") == 1);
      Poll.until(Duration.ofSeconds(10), "gauges follow", () -> gauges.pendingMessages() == 0);
      assertThat(audit.errorsContaining(STALE_LINE)).isEmpty();
    }
  }
}
