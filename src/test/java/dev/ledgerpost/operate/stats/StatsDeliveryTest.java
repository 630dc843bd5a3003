package dev.ledgerpost.operate.stats;

import static dev.ledgerpost.operate.stats.StatsFixture.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.operate.stats.StatsMessages.Dimension;
import dev.ledgerpost.operate.stats.StatsMessages.RolledUp;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Usage statistics by delivery state and category (docs/design.md §8.12, docs/data-model.md §5.29) against a generated
 * ledger (bench/stats-generate.sql) with generated tracking facts: the API's recipient counts equal a plain query over
 * {@code delivery_facts} (each recipient's final fact once: its last delivered, bounced or expired, else its last
 * deferral) all live, after the roll-up, after late facts changed recipients of rolled hours (read as the change since
 * the mark), after the job moved the mark, and after an erasure. Then the barrier that waits for fact writers, and CSV.
 */
class StatsDeliveryTest {
  static final int MESSAGES = 3000;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension();

  static final StatsFixture stats = new StatsFixture(gateway, MESSAGES);
  static final Instant SINCE = stats.since;
  static final Instant UNTIL = stats.until;

  /**
   * Facts for the SENT messages' recipients, by a hash of the recipient: none (one in ten), delivered; deferred then
   * delivered; deferred only; bounced by the log and again by a DSN; deferred twice then expired; delivered then bounced
   * by a late DSN (the last final fact wins); deferred and delivered at the same second (the final one wins).
   */
  private static final String FACTS = """
      INSERT INTO delivery_facts (message_id, idx, state, at, category, source, evidence, event_key)
      SELECT r.message_id, r.idx, v.state, m.received_at + v.sec * interval '1 second', v.category, v.source, 'generated',
             decode(md5(r.message_id::text || r.idx || v.n || '%1$s'), 'hex')
        FROM recipients r JOIN messages m ON m.id = r.message_id
        CROSS JOIN LATERAL (SELECT abs(hashtext(r.message_id::text || r.idx)) AS hh) h
        JOIN (VALUES
          (0, 1, 'delivered', NULL, 5, 'postfix-log'),
          (1, 1, 'deferred', 'connection', 5, 'postfix-log'), (1, 2, 'delivered', NULL, 600, 'postfix-log'),
          (2, 1, 'deferred', 'mailbox_full', 5, 'postfix-log'),
          (3, 1, 'bounced', 'invalid_recipient', 5, 'postfix-log'), (3, 2, 'bounced', 'invalid_recipient', 60, 'dsn'),
          (4, 1, 'deferred', 'dns', 5, 'postfix-log'), (4, 2, 'deferred', 'dns', 900, 'postfix-log'),
          (4, 3, 'expired', 'other', 3600, 'postfix-log'),
          (5, 1, 'delivered', NULL, 5, 'postfix-log'), (5, 2, 'bounced', 'spam_block', 7200, 'dsn'),
          (6, 1, 'deferred', 'policy', 5, 'postfix-log'), (6, 2, 'delivered', NULL, 5, 'postfix-log'))
          AS v(kind, n, state, category, sec, source) ON v.kind = h.hh %% 7
       WHERE m.status = 'SENT' AND h.hh %% 10 <> 0 AND (%2$s)""";

  static void generate() throws Exception {
    stats.generate(st -> {
      st.execute("UPDATE messages SET auth_user = 'erin@example.org' WHERE auth_user = 'user3'");
      st.execute(FACTS.formatted("first", "true"));
      st.execute("ANALYZE messages");
      st.execute("ANALYZE delivery_facts");
      assertThat(count(st, "SELECT count(DISTINCT (message_id, idx)) FROM delivery_facts")).isGreaterThan(MESSAGES);
    });
  }

  @Test
  void recipientCountsEqualAPlainQueryLiveRolledAfterLateFactsAndAfterAnErasure() throws Exception {
    generate();
    String url = gateway.databaseUrl();
    everyGroupingMatches("all live");

    RolledUp first = stats.rollup();
    assertThat(first.deliveryRolled()).as("hours rolled by delivery state").isBetween(60, 80);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT fact_id FROM stats_delivery_mark")).isEqualTo(count(st, "SELECT max(id) FROM delivery_facts"));
      assertThat(count(st, "SELECT sum(recipients) FROM stats_delivery_hours")).as("rolled recipients").isPositive();
    }
    everyGroupingMatches("rolled");

    // Late facts about recipients of rolled hours: deferred ones delivered, delivered ones bounced by a DSN, recipients
    // without news deferred; read as their change since the mark until the job moves it.
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      String late = """
          INSERT INTO delivery_facts (message_id, idx, state, at, category, source, evidence, event_key)
          SELECT r.message_id, r.idx, v.state, m.received_at + interval '3 hours', v.category, 'dsn', 'late',
                 decode(md5(r.message_id::text || r.idx || 'late'), 'hex')
            FROM recipients r JOIN messages m ON m.id = r.message_id
            CROSS JOIN LATERAL (SELECT abs(hashtext(r.message_id::text || r.idx)) AS hh) h
            JOIN (VALUES (2, 'delivered', NULL), (0, 'bounced', 'spam_block'), (4, 'deferred', 'connection'))
              AS v(kind, state, category) ON v.kind = h.hh % 7
           WHERE m.status = 'SENT' AND (h.hh % 10 <> 0 OR v.kind = 4) AND h.hh % 3 = 0
             AND m.received_at < now() - interval '3 hours'""";
      assertThat(st.executeUpdate(late)).isPositive();
    }
    everyGroupingMatches("late facts, before the job");
    RolledUp second = stats.rollup();
    assertThat(second.deliveryRolled()).as("no new hour: the late facts were summed into the rolled ones").isLessThanOrEqualTo(1);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT fact_id FROM stats_delivery_mark")).isEqualTo(count(st, "SELECT max(id) FROM delivery_facts"));
    }
    everyGroupingMatches("late facts, after the job");

    HttpResponse<String> erased = gateway.post("/api/v1/erasures", new JsonObject().put("address", "erin@example.org").encode(),
        "X-Operator", "dpo");
    assertThat(erased.statusCode()).as(erased.body()).isEqualTo(200);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT count(*) FROM stats_delivery_hours WHERE auth_user = 'erin@example.org'"))
          .as("the erasure rewrote the delivery roll-up's copy of the address too").isZero();
    }
    everyGroupingMatches("after an erasure");
  }

  @Test
  void theBarrierWaitsForAFactWriterInProgress() throws Exception {
    generate();
    try (Connection writer = TestDatabase.connect(gateway.databaseUrl()); Connection job = TestDatabase.connect(gateway.databaseUrl());
        Statement w = writer.createStatement(); Statement j = job.createStatement()) {
      writer.setAutoCommit(false);
      w.execute("SELECT pg_advisory_xact_lock_shared(19539, 2)"); // as TrackingStore does before its insert
      w.execute(FACTS.formatted("barrier", "r.message_id = (SELECT message_id FROM delivery_facts ORDER BY id LIMIT 1)"));
      long written = count(w, "SELECT max(id) FROM delivery_facts");
      j.execute("SET lock_timeout = '300ms'");
      assertThatThrownBy(() -> count(j, "SELECT stats_delivery_barrier()")).isInstanceOf(SQLException.class)
          .hasMessageContaining("lock timeout");
      writer.commit();
      assertThat(count(j, "SELECT stats_delivery_barrier()")).isGreaterThanOrEqualTo(written);
    }
  }

  @Test
  void csvHoldsTheSameRecipientCountsWithEmptyMessagesAndBytes() throws Exception {
    generate();
    List<Dimension> by = List.of(Dimension.DELIVERY, Dimension.CATEGORY);
    String q = "/api/v1/stats?since=" + SINCE + "&until=" + UNTIL + "&bucket=1d&groupBy=delivery,category&format=csv";
    HttpResponse<String> r = get(q);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    String[] lines = r.body().split("\r\n");
    assertThat(lines[0]).isEqualTo("bucket,delivery,category,messages,recipients,bytes");
    List<String> rows = new ArrayList<>();
    for (int i = 1; i < lines.length; i++) {
      rows.add(lines[i]);
    }
    assertThat(rows).isEqualTo(expected(SINCE, UNTIL, 24, by, null).stream().map(l -> {
      String[] p = l.split("\\|", -1);
      return p[0] + "," + p[1] + "," + (p[2].equals("null") ? "" : p[2]) + ",," + p[3] + ",";
    }).toList());
  }

  private void everyGroupingMatches(String when) throws Exception {
    List<List<Dimension>> groupings = List.of(List.of(Dimension.DELIVERY), List.of(Dimension.CATEGORY),
        List.of(Dimension.DELIVERY, Dimension.CATEGORY), List.of(Dimension.USER, Dimension.DELIVERY, Dimension.CATEGORY),
        List.of(Dimension.CATEGORY, Dimension.DELIVERY, Dimension.USER));
    for (int hours : new int[] {1, 24}) {
      for (List<Dimension> by : groupings) {
        String groupBy = String.join(",", by.stream().map(Dimension::label).toList());
        HttpResponse<String> r = get(stats.query(hours, by));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<String> want = expected(SINCE, UNTIL, hours, by, null);
        assertThat(want).isNotEmpty();
        assertThat(lines(new JsonObject(r.body()), by)).as(when + ": bucket " + hours + "h, groupBy " + groupBy).isEqualTo(want);
      }
    }
    List<Dimension> by = List.of(Dimension.DELIVERY, Dimension.CATEGORY);
    HttpResponse<String> r = get("/api/v1/stats?since=" + SINCE + "&until=" + UNTIL + "&bucket=1h&groupBy=delivery,category&user=user0");
    assertThat(lines(new JsonObject(r.body()), by)).as(when + ": user0").isEqualTo(expected(SINCE, UNTIL, 1, by, "user0")).isNotEmpty();
  }

  private static HttpResponse<String> get(String path) throws Exception {
    return stats.get(path, gateway.gateway().adminToken(), null);
  }

  static List<String> lines(JsonObject answer, List<Dimension> by) {
    List<String> out = new ArrayList<>();
    JsonArray rows = answer.getJsonArray("rows");
    for (int i = 0; i < rows.size(); i++) {
      JsonObject r = rows.getJsonObject(i);
      assertThat(r.getValue("messages")).as("messages are not split by delivery state").isNull();
      assertThat(r.getValue("bytes")).isNull();
      StringBuilder line = new StringBuilder(r.getString("bucket"));
      for (Dimension d : by) {
        line.append('|').append(r.getString(d.label()));
      }
      out.add(line.append('|').append(r.getLong("recipients")).toString());
    }
    return out;
  }

  /**
   * The plain query: each recipient's final fact (its last delivered, bounced or expired by time, else its last
   * deferral; then by id), counted in its message's received_at bucket. Nothing of the roll-up.
   */
  static List<String> expected(Instant since, Instant until, int hours, List<Dimension> by, String user) throws Exception {
    StringBuilder cols = new StringBuilder();
    for (Dimension d : by) {
      cols.append(", ").append(d == Dimension.USER ? "auth_user" : d == Dimension.DELIVERY ? "delivery" : "category");
    }
    String sql = "SELECT " + StatsFixture.bucket("m.received_at", hours) + cols + ", count(*)"
        + " FROM (SELECT DISTINCT ON (f.message_id, f.idx) f.message_id, f.state AS delivery, f.category FROM delivery_facts f"
        + "        ORDER BY f.message_id, f.idx, CASE WHEN f.state IN ('delivered', 'bounced', 'expired') THEN 0"
        + "                 WHEN f.state = 'deferred' THEN 1 ELSE 2 END, f.at DESC, f.id DESC) x"
        + " JOIN messages m ON m.id = x.message_id"
        + " WHERE m.received_at >= ?::timestamptz AND m.received_at < ?::timestamptz" + (user == null ? "" : " AND m.auth_user = ?")
        + " GROUP BY 1" + cols + " ORDER BY 1" + cols;
    return stats.rows(sql, since, until, user, by.size(), 1);
  }
}
