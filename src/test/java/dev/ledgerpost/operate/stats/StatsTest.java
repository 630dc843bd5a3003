package dev.ledgerpost.operate.stats;

import static dev.ledgerpost.operate.stats.StatsFixture.count;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.operate.stats.StatsMessages.Dimension;
import dev.ledgerpost.operate.stats.StatsMessages.RolledUp;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Usage statistics (docs/design.md §8.12) against a generated ledger (bench/stats-generate.sql, the benchmark's own
 * generator): the API's counts equal a plain count over {@code messages} for several bucket and groupBy combinations,
 * before the roll-up (all live), after it, after rows of rolled hours changed (a late settle, a manual resolution, an
 * erasure of a user's address), and after the job folded those changes in. Then the scoping of a send API key, the
 * refusals of bad parameters, and the CSV form.
 */
class StatsTest {
  static final String USER0_KEY = "stats-test-user0-key";
  static final String USER1_KEY = "stats-test-user1-key";
  static final int MESSAGES = 4000;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(USER0_KEY, "user0:1000", USER1_KEY, "user1:1000")).toString());

  /** The generated rows span the 70 hours before the test's start; rolled hours are those ended an hour before that. */
  static final StatsFixture stats = new StatsFixture(gateway, MESSAGES);
  static final Instant NOW = stats.now;
  static final Instant UNTIL = stats.until;
  static final Instant SINCE = stats.since;

  static void generate() throws Exception {
    stats.generate(st -> {
      // one user is an address, so that an erasure changes rows of rolled hours
      st.execute("UPDATE messages SET auth_user = 'erin@example.org' WHERE auth_user = 'user3'");
      // tags (V101): one, two or none; a message counts once per tag under groupBy=tag
      st.execute("UPDATE messages SET tags = CASE abs(hashtext(id::text)) % 4 WHEN 0 THEN ARRAY['invoice'] "
          + "WHEN 1 THEN ARRAY['invoice', 'eu'] WHEN 2 THEN ARRAY['newsletter'] END");
      // open rows in hours the roll-up will take (the generator keeps old ones rare, as the stale watch does)
      for (String[] open : new String[][] {{"PENDING", "100"}, {"UNKNOWN", "200"}}) {
        st.execute("UPDATE messages SET status = '" + open[0] + "', version = 1, settled_at = NULL WHERE id IN "
            + "(SELECT id FROM messages ORDER BY id OFFSET " + open[1] + " LIMIT 5)");
        st.execute("UPDATE recipients SET status = '" + open[0] + "' WHERE message_id IN "
            + "(SELECT id FROM messages ORDER BY id OFFSET " + open[1] + " LIMIT 5)");
      }
      st.execute("ANALYZE messages");
      assertThat(count(st, "SELECT count(*) FROM messages")).isEqualTo(MESSAGES);
    });
  }

  @Test
  void countsEqualAPlainCountBeforeAndAfterTheRollUpAndAfterRolledHoursChange() throws Exception {
    generate();
    String url = gateway.databaseUrl();
    everyCombinationMatches("all live");

    RolledUp first = stats.rollup();
    assertThat(first.rolled()).as("hours rolled: those of the 70 hours that ended an hour ago").isBetween(60, 80);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT count(*) FROM stats_open")).as("open rows of rolled hours, read live").isPositive();
      assertThat(count(st, "SELECT count(*) FROM stats_days_rolled")).as("whole days rolled: their sums answer per day").isPositive();
      assertThat(count(st, "SELECT sum(messages) FROM stats_rolled")).as("rolled hours' rows")
          .isEqualTo(count(st, "SELECT count(*) FROM messages WHERE received_at < '"
              + NOW.minus(StatsRollup.DELAY).truncatedTo(ChronoUnit.HOURS) + "'"));
    }
    everyCombinationMatches("rolled");

    String pending;
    String unknown;
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      pending = string(st, "SELECT p.id FROM stats_open p JOIN messages m ON m.id = p.id WHERE m.status = 'PENDING' ORDER BY p.id LIMIT 1");
      unknown = string(st, "SELECT p.id FROM stats_open p JOIN messages m ON m.id = p.id WHERE m.status = 'UNKNOWN' ORDER BY p.id LIMIT 1");
      // a late settle, as the ledger's SettleBatch writes it (the retry part's settle after a restart)
      assertThat(st.executeUpdate("UPDATE messages SET status = 'SENT', version = version + 1, settled_at = now() WHERE id = '"
          + pending + "' AND status = 'PENDING'")).isEqualTo(1);
      st.executeUpdate("UPDATE recipients SET status = 'ACCEPTED' WHERE message_id = '" + pending + "'");
    }
    HttpResponse<String> resolved = gateway.post("/api/v1/messages/" + unknown + "/resolution",
        "{\"outcome\": \"NOT_DELIVERED\", \"note\": \"not in the smarthost's log\"}", "X-Operator", "ops");
    assertThat(resolved.statusCode()).as(resolved.body()).isEqualTo(200);
    HttpResponse<String> erased = gateway.post("/api/v1/erasures", new JsonObject().put("address", "erin@example.org").encode(),
        "X-Operator", "dpo");
    assertThat(erased.statusCode()).as(erased.body()).isEqualTo(200);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT count(*) FROM stats_hours WHERE auth_user = 'erin@example.org'"))
          .as("the erasure rewrote the roll-up's copy of the address too").isZero();
      assertThat(count(st, "SELECT count(*) FROM messages WHERE auth_user = 'erin@example.org'")).isZero();
    }
    everyCombinationMatches("changed after the roll-up, not folded yet");

    RolledUp second = stats.rollup();
    assertThat(second.folded()).as("the hours of the settled and the resolved row, redone").isGreaterThanOrEqualTo(1);
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      assertThat(count(st, "SELECT count(*) FROM stats_open WHERE id IN ('" + pending + "', '" + unknown + "')"))
          .as("closed rows leave stats_open").isZero();
      assertThat(count(st, "SELECT count(*) FROM stats_days WHERE auth_user = 'erin@example.org'")).isZero();
    }
    everyCombinationMatches("folded");
  }

  @Test
  void aSendKeySeesItsOwnUserOnly() throws Exception {
    generate();
    String q = "/api/v1/stats?since=" + SINCE + "&until=" + UNTIL + "&bucket=1d&groupBy=user,status";
    HttpResponse<String> own = get(q, USER0_KEY, null);
    assertThat(own.statusCode()).as(own.body()).isEqualTo(200);
    JsonObject body = new JsonObject(own.body());
    assertThat(body.getString("user")).isEqualTo("user0");
    assertThat(lines(body, List.of(Dimension.USER, Dimension.STATUS))).isNotEmpty()
        .isEqualTo(expected(SINCE, UNTIL, 24, List.of(Dimension.USER, Dimension.STATUS), "user0"));
    HttpResponse<String> other = get(q + "&user=user1", USER0_KEY, null);
    assertThat(other.statusCode()).isEqualTo(403);
    assertThat(new JsonObject(other.body()).getString("detail")).contains("its own user only (user0)");
    assertThat(get(q, null, null).statusCode()).isEqualTo(401);
    assertThat(get(q, "not-a-key", null).statusCode()).isEqualTo(401);
    HttpResponse<String> admin = get(q + "&user=user1", gateway.gateway().adminToken(), null);
    assertThat(lines(new JsonObject(admin.body()), List.of(Dimension.USER, Dimension.STATUS)))
        .isEqualTo(expected(SINCE, UNTIL, 24, List.of(Dimension.USER, Dimension.STATUS), "user1")).isNotEmpty();
  }

  @Test
  void badParametersAreProblemsThatSayWhatIsWrong() throws Exception {
    String admin = gateway.gateway().adminToken();
    Object[][] cases = {
        {"bucket=2h", 400, "bucket must be 1h or 1d, not 2h"},
        {"groupBy=status,sender", 400, "unknown groupBy 'sender'"},
        {"groupBy=user,user", 400, "groupBy names user twice"},
        {"groupBy=status,category", 422, "groupBy=status cannot be combined with delivery or category"},
        {"groupBy=delivery,tag", 422, "groupBy=tag cannot be combined"},
        {"since=yesterday", 400, "since must be an ISO-8601 timestamp"},
        {"since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", 422, "must be before until"},
        {"since=2026-11-01T00:00:00Z&until=2026-11-01T00:00:00Z", 422, "must be before until"},
        {"bucket=1h&since=2026-10-01T00:00:00Z&until=2026-11-10T00:00:00Z", 422, "too long for bucket=1h: 40 days asked, at most 31"},
        {"bucket=1d&since=2025-01-01T00:00:00Z&until=2026-11-10T00:00:00Z", 422, "at most 400"},
        {"bucket=1h&since=2026-11-01T10:30:00Z&until=2026-11-02T00:00:00Z", 422, "since must be on a bucket's edge: a whole hour"},
        {"bucket=1d&since=2026-11-01T10:00:00Z&until=2026-11-02T00:00:00Z", 422, "midnight UTC"},
    };
    for (Object[] c : cases) {
      HttpResponse<String> r = get("/api/v1/stats?" + c[0], admin, null);
      assertThat(r.statusCode()).as(c[0] + ": " + r.body()).isEqualTo(c[1]);
      assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
      assertThat(new JsonObject(r.body()).getString("detail")).as(c[0].toString()).contains((String) c[2]);
    }
  }

  @Test
  void csvHoldsTheSameRowsAsJson() throws Exception {
    generate();
    String q = "/api/v1/stats?since=" + SINCE + "&until=" + UNTIL + "&bucket=1h&groupBy=status,user";
    List<Dimension> by = List.of(Dimension.STATUS, Dimension.USER);
    List<String> want = expected(SINCE, UNTIL, 1, by, null);
    for (HttpResponse<String> r : List.of(get(q + "&format=csv", gateway.gateway().adminToken(), null),
        get(q, gateway.gateway().adminToken(), "text/csv"))) {
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/csv");
      String[] lines = r.body().split("\r\n");
      assertThat(lines[0]).isEqualTo("bucket,status,user,messages,recipients,bytes");
      List<String> rows = new ArrayList<>();
      for (int i = 1; i < lines.length; i++) {
        rows.add(lines[i].replace(',', '|'));
      }
      assertThat(rows).hasSize(want.size()).isEqualTo(want.stream().map(l -> l.replace("|null|", "||")).toList());
    }
    assertThat(get(q, gateway.gateway().adminToken(), "application/json").headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/json");
  }

  @Test
  void theBenchmarksSavedQueryIsTheGatewaysOwn() throws Exception {
    assertThat(Files.readString(Path.of("bench/stats-query-user.sql")).strip())
        .isEqualTo("PREPARE stats_user(timestamptz, timestamptz, text, int) AS\n" + StatsQueries.sql(List.of(Dimension.USER)) + ";");
  }

  private void everyCombinationMatches(String when) throws Exception {
    List<List<Dimension>> groupings = List.of(List.of(), List.of(Dimension.STATUS), List.of(Dimension.USER),
        List.of(Dimension.USER, Dimension.STATUS), List.of(Dimension.STATUS, Dimension.USER), List.of(Dimension.TAG),
        List.of(Dimension.TAG, Dimension.USER), List.of(Dimension.STATUS, Dimension.TAG));
    for (int hours : new int[] {1, 24}) {
      for (List<Dimension> by : groupings) {
        String groupBy = String.join(",", by.stream().map(Dimension::label).toList());
        HttpResponse<String> r = get(stats.query(hours, by), gateway.gateway().adminToken(), null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<String> want = expected(SINCE, UNTIL, hours, by, null);
        assertThat(want).isNotEmpty();
        assertThat(lines(new JsonObject(r.body()), by)).as(when + ": bucket " + hours + "h, groupBy " + groupBy).isEqualTo(want);
      }
    }
  }

  private static HttpResponse<String> get(String path, String token, String accept) throws Exception {
    return stats.get(path, token, accept);
  }

  static List<String> lines(JsonObject answer, List<Dimension> by) {
    List<String> out = new ArrayList<>();
    JsonArray rows = answer.getJsonArray("rows");
    for (int i = 0; i < rows.size(); i++) {
      JsonObject r = rows.getJsonObject(i);
      StringBuilder line = new StringBuilder(r.getString("bucket"));
      for (Dimension d : by) {
        line.append('|').append(r.getString(d.label()));
      }
      out.add(line.append('|').append(r.getLong("messages")).append('|').append(r.getLong("recipients")).append('|')
          .append(r.getLong("bytes")).toString());
    }
    return out;
  }

  /**
   * The plain count: every message received in [since, until) (the generator sets received_at to its id's time), by
   * received_at's UTC bucket, with its recipients counted by a subquery (by tag: once per tag). Nothing of the roll-up.
   */
  static List<String> expected(Instant since, Instant until, int hours, List<Dimension> by, String user) throws Exception {
    StringBuilder cols = new StringBuilder();
    for (Dimension d : by) {
      cols.append(", ").append(d == Dimension.USER ? "auth_user" : d == Dimension.TAG ? "tag" : "status");
    }
    String sql = "SELECT " + StatsFixture.bucket("received_at", hours) + cols
        + ", count(*), sum((SELECT count(*) FROM recipients r WHERE r.message_id = m.id)), sum(size_bytes) FROM messages m"
        + (by.contains(Dimension.TAG) ? " CROSS JOIN LATERAL unnest(m.tags) AS t(tag)" : "")
        + " WHERE received_at >= ?::timestamptz AND received_at < ?::timestamptz" + (user == null ? "" : " AND auth_user = ?")
        + " GROUP BY 1" + cols + " ORDER BY 1" + cols;
    return stats.rows(sql, since, until, user, by.size(), 3);
  }

  private static String string(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      assertThat(rs.next()).as(sql).isTrue();
      return rs.getString(1);
    }
  }
}
