package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The hot path's statements as the writer's connections run them (docs/contract.md §2.6 "Plans", issue 33): kept
 * prepared by the client, and on a generic plan that still reads only the partitions of the batch's rows, however many
 * weeks the ledger keeps.
 */
class HotPathPlansTest {

  @Test
  void everyHotStatementIsShortEnoughToStayPrepared() {
    Map<String, String> statements = Map.of("OpenBatch FIRST", OpenBatch.FIRST, "OpenBatch AGAIN", OpenBatch.AGAIN,
        "SettleBatch", SettleBatch.SETTLE);
    statements.forEach((name, sql) -> assertThat(sql.length())
        .as("%s: %d characters, the client's statement cache limit is %d", name, sql.length(),
            DatabaseTarget.STATEMENT_CACHE_SQL_LIMIT)
        .isLessThanOrEqualTo(DatabaseTarget.STATEMENT_CACHE_SQL_LIMIT));
    assertThat(DatabaseTarget.fromUrl("postgresql://localhost/db", Duration.ofSeconds(1)).options()
        .getPreparedStatementCacheSqlFilter().test("x".repeat(DatabaseTarget.STATEMENT_CACHE_SQL_LIMIT))).isTrue();
  }

  /**
   * A year of weekly partitions (the default retention keeps 58), the settle prepared on a generic plan as the
   * writer's connections force: the executor removes every partition but the batch's, in both tables. Without the
   * statement's id range ({@code = ANY} of an array parameter alone) nothing is removed and every execution reads
   * every partition's index.
   */
  @Test
  void theSettlesGenericPlanReadsOnlyTheBatchsPartitions() throws Exception {
    String url = TestDatabase.newDatabase();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      Partitions.ensureWeeks(c, Instant.now(), 52);
      int partitions = count(st, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'messages'::regclass");
      assertThat(partitions).isGreaterThanOrEqualTo(52);

      UUID a = LedgerIds.next();
      UUID b = LedgerIds.next();
      st.execute("SET plan_cache_mode = force_generic_plan");
      st.execute("PREPARE settle AS " + SettleBatch.SETTLE);
      String plan = explain(st, "EXPLAIN (COSTS OFF) EXECUTE settle('{" + a + "," + b + "}', '{1,1}', '{SENT,SENT}', "
          + "'{ok,ok}', '{NULL,NULL}', '{SENT,SENT}', '{250,250}', '{2.0.0,2.0.0}', '{ok,ok}', '{1,1}', '{x,x}', '"
          + a + "', '" + b + "')");
      List<Integer> removed = removed(plan);
      assertThat(removed).as("the generic plan's pruning of messages and of recipients:%n%s", plan).hasSize(2);
      // Both ids were made this instant: one week, so every partition but one (or two at a week's turn) is removed.
      assertThat(removed).allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(partitions - 2));
      assertThat(count(st, "SELECT generic_plans FROM pg_prepared_statements WHERE name = 'settle'")).isEqualTo(1);
    }
  }

  @Test
  void idBoundsFollowPostgresOrderNotJavas() throws Exception {
    // The low halves differ in their top bit: Java's signed compare puts 8... below 0..., PostgreSQL puts it above.
    UUID low = UUID.fromString("0193a5c2-7c1e-7d4a-0000-000000000000");
    UUID high = UUID.fromString("0193a5c2-7c1e-7d4a-8000-000000000000");
    List<UUID> batch = List.of(high, low);
    assertThat(Ids.lowest(batch, u -> u)).isEqualTo(low);
    assertThat(Ids.highest(batch, u -> u)).isEqualTo(high);
    try (Connection c = TestDatabase.connect(TestDatabase.newDatabase()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT '" + low + "'::uuid < '" + high + "'::uuid")) {
      rs.next();
      assertThat(rs.getBoolean(1)).isTrue();
    }
  }

  private static int count(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static String explain(Statement st, String sql) throws Exception {
    StringBuilder plan = new StringBuilder();
    try (ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
    }
    return plan.toString();
  }

  private static List<Integer> removed(String plan) {
    List<Integer> removed = new ArrayList<>();
    Matcher m = Pattern.compile("Subplans Removed: (\\d+)").matcher(plan);
    while (m.find()) {
      removed.add(Integer.parseInt(m.group(1)));
    }
    return removed;
  }
}
