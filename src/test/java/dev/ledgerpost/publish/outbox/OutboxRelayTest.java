package dev.ledgerpost.publish.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonObject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox relay against real concurrent PostgreSQL transactions. */
class OutboxRelayTest {
  static final Duration WAIT = Duration.ofSeconds(15);
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  void start(Map<String, Object> extra) throws Exception {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("notify.pollInterval", "100ms");
    o.putAll(extra);
    gateway.begin(o);
  }

  /**
   * Transaction A takes the lower seq but commits after B. A reader keeping "seq > cursor" would have
   * moved past A's seq when it published B, and never published A.
   */
  @Test
  void aRowThatCommitsAfterAHigherSeqIsStillPublishedOnce() throws Exception {
    start(Map.of());
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0", gateway.gateway().adminToken());
        Connection a = TestDatabase.connect(gateway.databaseUrl());
        Connection b = TestDatabase.connect(gateway.databaseUrl())) {
      a.setAutoCommit(false);
      b.setAutoCommit(false);
      long seqA = insert(a, "event-A");
      long seqB = insert(b, "event-B");
      assertThat(seqA).isLessThan(seqB);
      b.commit();
      poll(() -> published("event-B"));
      assertThat(ws.nextEvent(WAIT).getString("id")).isEqualTo("event-B");

      a.commit();
      JsonObject late = ws.nextEvent(WAIT);
      assertThat(late.getString("id")).isEqualTo("event-A");
      poll(() -> published("event-A"));
      assertThat(ws.poll()).isNull();
    }
    // pub_seq follows publish order, not seq order.
    assertThat(pubSeq("event-A")).isGreaterThan(pubSeq("event-B"));
  }

  @Test
  void aFailureAfterTheLedgerWriteRollsBackTheOutboxRowToo() throws Exception {
    start(Map.of());
    UUID id = UUID.randomUUID();
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute("INSERT INTO messages (id, intake, mail_from, size_bytes, body_sha256, route, status, version, received_at)"
          + " VALUES ('" + id + "', 'SMTP', 'a@example.com', 1, '00', 'r', 'PENDING', 1, now())");
      st.execute("INSERT INTO recipients (message_id, idx, address, status) VALUES ('" + id + "', 0, 'b@example.net', 'PENDING')");
      st.execute("INSERT INTO outbox (event_id, message_id, type, payload) VALUES ('" + id + ":2', '" + id + "', 'x', '{}')");
      // A constraint refusing this message's settled event makes the settle's outbox insert fail after its
      // message and recipient updates ran (the same statement).
      st.execute("ALTER TABLE outbox ADD CONSTRAINT test_refuse_settled CHECK (type <> 'message.settled' "
          + "OR NOT (message_ids @> ARRAY['" + id + "'::uuid]))");
    }
    var settle = new dev.ledgerpost.ledger.LedgerMessages.Settle(id, 1, dev.ledgerpost.ledger.MessageStatus.SENT, 1, 250,
        "2.0.0", "Ok", null);
    var result = dev.ledgerpost.platform.bus.Bus.of(gateway.vertx()).request(dev.ledgerpost.ledger.LedgerMessages.SETTLE, settle,
        dev.ledgerpost.ledger.LedgerMessages.Settled.class);
    try {
      GatewayHarness.await(result);
      throw new AssertionError("settle should have failed");
    } catch (dev.ledgerpost.platform.db.StoreException expected) {
      assertThat(expected.kind()).isEqualTo(dev.ledgerpost.platform.db.StoreException.Kind.PERSISTENCE);
    }
    assertThat(scalar("SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("PENDING");
    assertThat(scalar("SELECT status FROM recipients WHERE message_id = '" + id + "'")).isEqualTo("PENDING");
    assertThat(scalar("SELECT count(*) FROM outbox WHERE message_id = '" + id + "'")).isEqualTo("1");
  }

  @Test
  void retentionDeletesOldPublishedEventsAndResumingBehindThemResets() throws Exception {
    start(Map.of("notify.retention", "1s", "notify.pruneInterval", "1s"));
    try (Connection c = TestDatabase.connect(gateway.databaseUrl())) {
      insert(c, "old-1");
      insert(c, "old-2");
    }
    poll(() -> published("old-2"));
    poll(() -> "0".equals(scalarOrNull("SELECT count(*) FROM outbox WHERE event_id LIKE 'old-%'")));
    assertThat(Long.parseLong(scalar("SELECT pruned_through FROM outbox_publisher"))).isGreaterThanOrEqualTo(2);
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0", gateway.gateway().adminToken())) {
      assertThat(ws.nextEvent(WAIT).getString("type")).isEqualTo("reset");
    }
  }

  private static long insert(Connection c, String eventId) throws Exception {
    try (PreparedStatement st = c.prepareStatement(
        "INSERT INTO outbox (event_id, message_id, type, payload) VALUES (?, ?, 'test.event', '{}') RETURNING seq")) {
      st.setString(1, eventId);
      st.setObject(2, UUID.randomUUID());
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private boolean published(String eventId) {
    return scalarOrNull("SELECT pub_seq FROM outbox_events WHERE event_id = '" + eventId + "' AND published_at IS NOT NULL") != null;
  }

  private long pubSeq(String eventId) {
    return Long.parseLong(scalar("SELECT pub_seq FROM outbox_events WHERE event_id = '" + eventId + "'"));
  }

  private String scalar(String sql) {
    String v = scalarOrNull(sql);
    assertThat(v).as(sql).isNotNull();
    return v;
  }

  private String scalarOrNull(String sql) {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static void poll(BooleanSupplier condition) throws Exception {
    Poll.until(WAIT, "the condition", condition::getAsBoolean);
  }
}
