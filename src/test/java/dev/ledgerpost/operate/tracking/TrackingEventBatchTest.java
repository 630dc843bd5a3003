package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonObject;
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
 * Tracking's events batched (V115, docs/data-model.md §5.30): one statement's facts share outbox rows of up to 64
 * events, and every consumer still sees one event per fact, with its own id ({@code <message id>:tracking:<fact id>}),
 * type and payload, in fact order: the hub live and on resuming by seq, a webhook endpoint, and the operation status.
 */
class TrackingEventBatchTest {
  static final Path LOG = GatewayHarness.tempDir("tracking-batch-").resolve("mail.log");
  static final Duration WAIT = Duration.ofSeconds(60);
  /** More than one row's 64 events, in one message (smtp.maxRecipients is 100) and one batch of lines. */
  static final int N = 70;
  WebhookReceiver receiver;

  @RegisterExtension
  final GatewayHarness gateway = TrackingWebhookGateway.extension(LOG, "BA7C4ED", "tracking", 5,
      List.of("recipient.delivered", "recipient.deferred", "recipient.bounced"), r -> receiver = r);

  private static String address(int i) {
    return "r" + i + "@example.net";
  }

  /** A delivery line of recipient i: every third bounced, every fifth deferred, the rest delivered. */
  private static String line(int i) {
    String at = DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(Instant.now().truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    String outcome = i % 3 == 0 ? "dsn=5.1.1, status=bounced (host mx.example.net[192.0.2.1] said: 550 5.1.1 no such user)"
        : i % 5 == 0 ? "dsn=4.2.0, status=deferred (host mx.example.net[192.0.2.1] said: 450 4.2.0 try later)"
        : "dsn=2.0.0, status=sent (250 2.0.0 Ok)";
    return at + " smarthost postfix/smtp[7]: BA7C4ED1: to=<" + address(i) + ">, relay=mx.example.net[192.0.2.1]:25, delay=1, "
        + outcome + "\n";
  }

  private static String type(int i) {
    return i % 3 == 0 ? "recipient.bounced" : i % 5 == 0 ? "recipient.deferred" : "recipient.delivered";
  }

  @Test
  void aBatchOfFactsGivesOneEventPerFactOnTheHubAndToAWebhookInOrder() throws Exception {
    String url = gateway.databaseUrl();
    List<String> to = new ArrayList<>();
    for (int i = 0; i < N; i++) {
      to.add(address(i));
    }
    try (WsTestClient hub = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
        c.reply();
        assertThat(c.sendMail("s@example.com", to, "Subject: batch\r\n\r\nbody")).startsWith("250");
      }
      UUID id = UUID.fromString(LedgerRows.string(url, "SELECT id::text FROM messages"));
      StringBuilder lines = new StringBuilder();
      for (int i = 0; i < N; i++) {
        lines.append(line(i));
      }
      Files.writeString(LOG, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      Poll.until(WAIT, "every fact", () -> LedgerRows.count(url, "SELECT count(*) FROM delivery_facts") == N);

      // One statement, two rows of events (64 and 6), no row per fact.
      assertThat(LedgerRows.string(url, "SELECT string_agg(cardinality(fact_ids)::text, ',' ORDER BY seq) FROM outbox WHERE fact_ids IS NOT NULL"))
          .isEqualTo("64,6");
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE message_id IS NOT NULL AND type LIKE 'recipient.%'")).isZero();

      // The events each consumer must see: one per fact, in fact order, with the ids, types and payloads of before.
      List<String> expected = new ArrayList<>();
      List<Long> factIds = new ArrayList<>();
      try (Connection c = dev.ledgerpost.testing.TestDatabase.connect(url); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT f.id, r.address FROM delivery_facts f JOIN recipients r ON r.message_id = f.message_id"
              + " AND r.idx = f.idx ORDER BY f.id")) {
        while (rs.next()) {
          factIds.add(rs.getLong(1));
          String addr = rs.getString(2);
          int i = Integer.parseInt(addr.substring(1, addr.indexOf('@')));
          expected.add(id + ":tracking:" + rs.getLong(1) + " " + type(i) + " " + addr);
        }
      }
      assertThat(expected).hasSize(N);

      // The hub, live: N events, consecutive seqs, in fact order.
      List<String> live = new ArrayList<>();
      List<Long> seqs = new ArrayList<>();
      while (live.size() < N) {
        JsonObject e = hub.nextEvent(WAIT);
        if (e.getString("event", "").startsWith("recipient.")) {
          JsonObject data = e.getJsonObject("data");
          assertThat(e.getString("messageId")).isEqualTo(id.toString());
          assertThat(data.getString("id")).isEqualTo(id.toString());
          assertThat(data.getString("source")).isEqualTo("postfix-log");
          assertThat(data.getString("queueId")).isEqualTo("BA7C4ED1");
          assertThat(data.containsKey("remoteHost") && data.containsKey("rule") && data.containsKey("category")).isTrue();
          live.add(e.getString("id") + " " + e.getString("event") + " " + data.getString("recipient"));
          seqs.add(e.getLong("seq"));
        }
      }
      assertThat(live).containsExactlyElementsOf(expected);
      for (int k = 1; k < N; k++) {
        assertThat(seqs.get(k)).isEqualTo(seqs.get(0) + k);
      }

      // The hub, resuming by seq from just before the first of them: the same N events from the history.
      try (WsTestClient again = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=" + (seqs.get(0) - 1),
          gateway.gateway().adminToken())) {
        List<String> replayed = new ArrayList<>();
        while (replayed.size() < N) {
          JsonObject e = again.nextEvent(WAIT);
          if (e.getString("event", "").startsWith("recipient.")) {
            replayed.add(e.getString("id") + " " + e.getString("event") + " " + e.getJsonObject("data").getString("recipient"));
          }
        }
        assertThat(replayed).containsExactlyElementsOf(expected);
      }

      // The webhook: one signed call per fact, its webhook-id the event id, recorded in publication order.
      Poll.until(WAIT, "every fact's webhook call", () -> receiver.requests().size() >= N);
      Poll.until(WAIT, "every delivery of the endpoint ended", () -> LedgerRows.count(url,
          "SELECT count(*) FROM webhook_deliveries WHERE state NOT IN ('DELIVERED', 'FAILED')") == 0);
      assertThat(receiver.requests()).hasSize(N);
      List<String> called = new ArrayList<>();
      for (WebhookReceiver.Request r : receiver.requests()) {
        WebhookReceiver.verify(WebhookDeliveryTest.secret(5), r);
        JsonObject body = new JsonObject(r.body());
        called.add(r.id() + " " + body.getString("type") + " " + body.getJsonObject("data").getString("recipient"));
      }
      assertThat(called).containsExactlyInAnyOrderElementsOf(expected);
      List<String> recorded = new ArrayList<>();
      try (Connection c = dev.ledgerpost.testing.TestDatabase.connect(url); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT event_id, type, body::jsonb->'data'->>'recipient', pub_seq FROM webhook_deliveries"
              + " WHERE endpoint = 'tracking' ORDER BY pub_seq")) {
        while (rs.next()) {
          recorded.add(rs.getString(1) + " " + rs.getString(2) + " " + rs.getString(3));
        }
      }
      assertThat(recorded).containsExactlyElementsOf(expected);

      // The operation status counts the N events, all published, the last at the last seq.
      // (Its pending and settled events too: N + 2. Published means the whole row, so poll until the pass is seen.)
      Poll.until(WAIT, "the operation status's events", () -> {
        JsonObject publish = new JsonObject(gateway.get("/api/v1/operations/" + id).body()).getJsonObject("publish");
        return publish.getInteger("events") == N + 2 && publish.getInteger("published") == N + 2
            && publish.getLong("lastSeq") == seqs.get(N - 1);
      });

      // Erasure: the events of an erased recipient read with its hash, as the stored payloads did; its siblings' do not.
      var erased = gateway.post("/api/v1/erasures", new JsonObject().put("address", address(1)).put("reason", "test").encode(),
          "X-Operator", "dpo");
      assertThat(erased.statusCode()).as(erased.body()).isEqualTo(200);
      String hash = new JsonObject(erased.body()).getString("addressHash");
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE payload::text ILIKE '%" + address(1) + "%'"
          + " OR payload::text ILIKE '%\"" + address(1) + "\"%'")).isZero();
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%' AND payload->>'recipient' LIKE '%"
          + hash + "%'")).isEqualTo(1);
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM webhook_deliveries WHERE body ILIKE '%" + address(1) + "%'")).isZero();
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE payload->>'recipient' = '" + address(2) + "'"))
          .isEqualTo(1);
    }
  }
}
