package dev.ledgerpost.publish.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Publishing records a row's number in outbox_pub and never rewrites the outbox row (V118, docs/design.md §6.2; issue 33,
 * cut 4). Before V118 the publisher updated every row (pub_seq, published_at): not HOT, a new tuple and index entries.
 */
class OutboxPublicationCostTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final int MESSAGES = 40;
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  void start() throws Exception {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("notify.pollInterval", "100ms");
    gateway.begin(o);
  }

  String url() {
    return gateway.databaseUrl();
  }

  @Test
  void publishingNMessagesUpdatesNoOutboxRowAndNumbersEveryEventWithoutAGap() throws Exception {
    start();
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      for (int i = 0; i < MESSAGES; i++) {
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: m" + i + "\r\n\r\nbody")).startsWith("250");
      }
    }
    // Pending and settled: two events a message, every one published.
    Poll.until(WAIT, "every message settled and every event published", () ->
        LedgerRows.count(url(), "SELECT count(*) FROM outbox_events WHERE pub_seq IS NOT NULL") == 2L * MESSAGES
            && LedgerRows.count(url(), "SELECT count(*) FROM outbox_events WHERE pub_seq IS NULL") == 0);

    // Gap-free from 1, and the publisher's watermark is the last number.
    assertThat(LedgerRows.count(url(), "SELECT count(DISTINCT pub_seq) FROM outbox_events")).isEqualTo(2L * MESSAGES);
    assertThat(LedgerRows.count(url(), "SELECT max(pub_seq) FROM outbox_events")).isEqualTo(2L * MESSAGES);
    assertThat(LedgerRows.count(url(), "SELECT last_pub_seq FROM outbox_publisher")).isEqualTo(2L * MESSAGES);
    long rows = LedgerRows.count(url(), "SELECT count(*) FROM outbox");
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM outbox_pub")).isEqualTo(rows);

    // Every outbox tuple is still the one its writer inserted: its xmin is the writer's transaction (the row's xid).
    assertThat(LedgerRows.count(url(),
        "SELECT count(*) FROM outbox WHERE xmin::text::bigint <> xid::text::bigint % 4294967296")).as("rewritten outbox rows")
        .isZero();
    // And PostgreSQL's own count says so, once the publisher's connections have reported its inserts.
    Poll.until(WAIT, "the statistics caught up with the publisher", () -> LedgerRows.count(url(),
        "SELECT coalesce((SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'outbox_pub'), 0)") >= rows);
    assertThat(LedgerRows.count(url(), "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'outbox'"))
        .as("updates of outbox rows").isZero();

    // Once nothing is running, a pass raises the scan's horizon past every row: the next passes look at none of them.
    Poll.until(WAIT, "the horizon passed every published row", () -> LedgerRows.count(url(),
        "SELECT count(*) FROM outbox WHERE xid >= (SELECT xid_horizon FROM outbox_publisher)") == 0);
  }

  @Test
  void theLagGaugeSeesACommittedRowTheBusyPublisherHasNotNumbered() throws Exception {
    start();
    Bus bus = Bus.of(gateway.vertx());
    try (Connection holder = TestDatabase.connect(url()); Connection writer = TestDatabase.connect(url());
        Statement hold = holder.createStatement(); Statement st = writer.createStatement()) {
      holder.setAutoCommit(false);
      hold.execute("SELECT 1 FROM outbox_publisher WHERE id = 1 FOR UPDATE"); // every publisher waits for this
      st.execute("INSERT INTO outbox (event_id, message_id, type, payload, created_at) "
          + "VALUES ('lagging', gen_random_uuid(), 'test.event', '{}', now() - interval '1 hour')");
      double lag = GatewayHarness.await(bus.request(OutboxMessages.LAG, new OutboxMessages.Lag(), OutboxMessages.LagSeconds.class))
          .seconds();
      assertThat(lag).isGreaterThanOrEqualTo(3600);
      holder.commit();
    }
    Poll.until(WAIT, "the row published", () ->
        LedgerRows.count(url(), "SELECT count(*) FROM outbox_events WHERE event_id = 'lagging' AND pub_seq IS NOT NULL") == 1);
    Poll.until(WAIT, "the gauge back to 0", () -> GatewayHarness.await(
        bus.request(OutboxMessages.LAG, new OutboxMessages.Lag(), OutboxMessages.LagSeconds.class)).seconds() == 0);
  }
}
