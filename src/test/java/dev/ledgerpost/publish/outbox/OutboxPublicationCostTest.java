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

  /**
   * Whatever the plan (the hot path's connections run generic ones), the publisher's scan and the lag gauge read
   * outbox_xid_idx from the horizon and probe outbox_pub's key per row: a generic plan of a NOT EXISTS chose a hash
   * anti-join that read all of outbox_pub (1.4 s a pass at a million rows).
   */
  @Test
  void theScanAndTheGaugeWalkTheXidIndexOnAGenericPlan() throws Exception {
    start();
    try (Connection c = TestDatabase.connect(url()); Statement st = c.createStatement()) {
      // A ledger's outbox, not a test's few rows (on a few pages a sequential scan is right): 100,000 published rows,
      // numbered far above the gateway's own so that its publisher and they never meet.
      st.execute("WITH o AS (INSERT INTO outbox (event_id, message_id, type, payload) SELECT 'bulk-' || g, gen_random_uuid(),"
          + " 'test.event', '{}' FROM generate_series(1, 100000) g RETURNING seq)"
          + " INSERT INTO outbox_pub (seq, pub_seq) SELECT seq, 1000000000 + seq FROM o");
      st.execute("ANALYZE outbox");
      st.execute("ANALYZE outbox_pub");
      st.execute("SET plan_cache_mode = force_generic_plan");
      st.execute("PREPARE unpublished AS " + OutboxStore.UNPUBLISHED);
      st.execute("PREPARE lag AS " + OutboxStore.LAG);
      for (String execute : List.of("EXECUTE unpublished('0', 500)", "EXECUTE lag")) {
        StringBuilder plan = new StringBuilder();
        try (var rs = st.executeQuery("EXPLAIN (COSTS OFF) " + execute)) {
          while (rs.next()) {
            plan.append(rs.getString(1)).append('\n');
          }
        }
        // An index scan, or a bitmap scan and a sort: either reads only the rows at or above the horizon.
        assertThat(plan.toString()).as(plan.toString()).containsPattern("Index Scan (using|on) outbox_xid_idx")
            .contains("Index Only Scan using outbox_pub_pkey on outbox_pub p").doesNotContain("Hash")
            .doesNotContain("Seq Scan on outbox o").doesNotContain("Seq Scan on outbox_pub p");
      }
    }
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
