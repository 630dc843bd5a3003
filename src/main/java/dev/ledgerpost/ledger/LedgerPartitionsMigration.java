package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.LedgerIds;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.migration.Context;
import org.flywaydb.core.api.migration.JavaMigration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * V90: {@code messages} and {@code recipients} become RANGE-partitioned on the message id (docs/data-model.md §5.12), on a
 * populated ledger, while other nodes keep writing. No row is moved: each existing table becomes the first partition,
 * {@code [MINVALUE, B)}, B being the first id of the ISO week after the one holding tomorrow (so the rows written
 * while the migration runs still belong to it). Java, not SQL, because the steps must be separate transactions: a
 * step that scans holds only locks that let the hot path write, and a step that takes an exclusive lock scans nothing.
 *
 * <ol>
 *   <li>The foreign keys that reference {@code messages} are dropped (§5.12 says why), each in a short transaction.
 *   <li>{@code CHECK (id < B) NOT VALID} on each table (an ACCESS EXCLUSIVE lock for a catalog change), then
 *       {@code VALIDATE} (a scan under SHARE UPDATE EXCLUSIVE, which lets every open and settle through).
 *   <li>The swap, one transaction: rename each table and its indexes to the partition's name, create the partitioned
 *       parent with the same columns, checks, primary key and index, and ATTACH the old table, which skips its scan
 *       (the validated check proves the bound) and adopts its indexes; the DEFAULT partitions; the outbox_events
 *       view again (a view names its table by oid: it would still read the renamed one).
 *   <li>The partitions of the next {@link Partitions#AHEAD_WEEKS} weeks.
 * </ol>
 *
 * Every lock-taking step waits at most {@link Partitions#DDL_LOCK_TIMEOUT} and is tried again, so it never stands long
 * in the lock queue ahead of the hot path's statements. A run that failed part way can be run again: each step looks
 * at what is there first.
 */
public final class LedgerPartitionsMigration implements JavaMigration {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerPartitionsMigration.class);

  /** How long one step took; {@code exclusive} when it held an ACCESS EXCLUSIVE lock on a ledger table. */
  public record Timing(String step, boolean exclusive, Duration took) {}

  private final Clock clock;
  private final List<Timing> timings = new ArrayList<>();

  public LedgerPartitionsMigration() {
    this(Clock.systemUTC());
  }

  LedgerPartitionsMigration(Clock clock) {
    this.clock = clock;
  }

  @Override
  public MigrationVersion getVersion() {
    return MigrationVersion.fromVersion("90");
  }

  @Override
  public String getDescription() {
    return "ledger partitions";
  }

  @Override
  public Integer getChecksum() {
    return 90;
  }

  /** Its steps commit one by one: see the class comment. */
  @Override
  public boolean canExecuteInTransaction() {
    return false;
  }

  /** What each step took, in order (the test reports them). */
  public List<Timing> timings() {
    return List.copyOf(timings);
  }

  @Override
  public void migrate(Context context) throws Exception {
    Connection c = context.getConnection();
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(true);
    try {
      migrate(c);
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }

  private void migrate(Connection c) throws SQLException {
    long started = System.nanoTime();
    Instant now = clock.instant();
    Instant boundWeek = Partitions.weekStart(now.plus(Duration.ofDays(1))).plus(Duration.ofDays(7));
    UUID bound = LedgerIds.lowest(boundWeek);
    String swapped = null; // the first partition, when this run made the tables partitioned
    if (partitioned(c, "messages")) {
      LOG.info("V90: messages is partitioned already");
    } else {
      for (String fk : referencing(c)) {
        timed("drop " + fk, true, c, st -> st.execute("ALTER TABLE " + fk.replace("/", " DROP CONSTRAINT IF EXISTS ")));
      }
      for (Partitions.Table t : Partitions.TABLES) {
        String check = t.name() + "_v90_bound";
        timed("check " + t.name(), true, c, st -> {
          st.execute("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s".formatted(t.name(), check));
          st.execute("ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s < '%s') NOT VALID".formatted(t.name(), check, t.key(), bound));
        });
      }
      for (Partitions.Table t : Partitions.TABLES) {
        long start = System.nanoTime();
        try (Statement st = c.createStatement()) {
          // SHARE UPDATE EXCLUSIVE only; waits out an autovacuum rather than failing on it
          st.execute("ALTER TABLE %s VALIDATE CONSTRAINT %s_v90_bound".formatted(t.name(), t.name()));
        }
        record("validate " + t.name(), false, start);
      }
      String first = "_before_" + Partitions.name("", boundWeek).substring(1);
      timed("swap", true, c, st -> {
        // The order the open writes them in, so the swap and an open never wait on each other crosswise.
        st.execute("LOCK TABLE messages, recipients IN ACCESS EXCLUSIVE MODE");
        for (Partitions.Table t : Partitions.TABLES) {
          swap(st, t, t.name() + first, bound);
        }
        remakeOutboxEvents(st, "messages" + first);
      });
      swapped = "messages" + first;
    }
    for (int i = 0; i < Partitions.AHEAD_WEEKS + 2; i++) {
      long start = System.nanoTime();
      List<String> made = Partitions.ensureWeeks(c, now.plus(Duration.ofDays(7L * i)), 1);
      if (!made.isEmpty()) {
        record("create " + made.get(0), true, start);
      }
    }
    if (swapped != null) {
      LOG.info(summary(count(c, swapped), swapped, Duration.ofNanos(System.nanoTime() - started)));
    }
    // Every step with its time is for whoever measures a migration (PartitionMigrationTest prints them), not for the
    // start-up log: on a new ledger that line was a screenful that read like trouble.
    LOG.debug("V90 steps: {}", timings);
  }

  /**
   * The one INFO line of a migration that partitioned the ledger: how many messages it had (counted up to
   * {@link #COUNTED}, more is "more than"), how long it took and the longest exclusive lock (what writers may have waited
   * for); on a new ledger, that it was empty.
   */
  String summary(long messages, String firstPartition, Duration took) {
    Duration longestLock = timings.stream().filter(Timing::exclusive).map(Timing::took).max(Duration::compareTo)
        .orElse(Duration.ZERO);
    String count = String.format(java.util.Locale.ROOT, messages > COUNTED ? "more than %,d" : "%,d", Math.min(messages, COUNTED));
    return "V90: the ledger is partitioned by week (docs/data-model.md §5.12) in " + took.toMillis() + " ms; "
        + (messages == 0 ? "it was empty" : "its %s messages stay in %s, the longest lock took %d ms"
            .formatted(count, firstPartition, longestLock.toMillis()));
  }

  /** Messages counted for the log line; a larger ledger is "more than" this, so the count never scans it all. */
  static final long COUNTED = 1_000_000;

  /**
   * The rows of the partition that was the table, up to one more than {@link #COUNTED}: a scan that takes no lock a
   * writer waits for, and that stops early on a long ledger.
   */
  private static long count(Connection c, String table) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %d) AS counted".formatted(table, COUNTED + 1))) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * The outbox_events view (V40) over the partitioned parent: a view names its tables by oid, so after the rename it
   * reads the old table. Its own definition, with the renamed table's name put back, keeps it exactly as it was.
   */
  private static void remakeOutboxEvents(Statement st, String renamed) throws SQLException {
    String definition;
    try (ResultSet rs = st.executeQuery("SELECT pg_get_viewdef('outbox_events'::regclass)")) {
      rs.next();
      definition = rs.getString(1);
    }
    st.execute("CREATE OR REPLACE VIEW outbox_events AS " + definition.replaceAll("\\b" + renamed + "\\b", "messages"));
  }

  /** One table's swap; see the class comment. */
  private static void swap(Statement st, Partitions.Table t, String partition, UUID bound) throws SQLException {
    String n = t.name();
    st.execute("ALTER TABLE %s RENAME TO %s".formatted(n, partition));
    st.execute("ALTER INDEX %s_pkey RENAME TO %s_pkey".formatted(n, partition));
    if (n.equals("messages")) {
      st.execute("ALTER INDEX messages_open_idx RENAME TO %s_open_idx".formatted(partition));
    }
    st.execute("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (%s)"
        .formatted(n, partition, t.key()));
    st.execute("ALTER TABLE %s DROP CONSTRAINT %s_v90_bound".formatted(n, n));
    st.execute("ALTER TABLE %s ADD CONSTRAINT %s_pkey PRIMARY KEY (%s)"
        .formatted(n, n, n.equals("messages") ? "id" : "message_id, idx"));
    if (n.equals("messages")) {
      // V40's index of the open rows, as the partition has it (ATTACH adopts the partition's own)
      st.execute("CREATE INDEX messages_open_idx ON messages (received_at) WHERE settled_at IS NULL OR status = 'UNKNOWN'");
    }
    st.execute("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (MINVALUE) TO ('%s')".formatted(n, partition, bound));
    st.execute("ALTER TABLE %s DROP CONSTRAINT %s_v90_bound".formatted(partition, n));
    st.execute("CREATE TABLE %s_default PARTITION OF %s DEFAULT WITH (fillfactor = 80)".formatted(n, n));
  }

  private static boolean partitioned(Connection c, String table) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(?)")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  /** "table/constraint" of every foreign key that references messages. */
  private static List<String> referencing(Connection c) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("""
            SELECT conrelid::regclass::text || '/' || conname FROM pg_constraint
             WHERE contype = 'f' AND confrelid = 'messages'::regclass ORDER BY 1""")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  private void timed(String step, boolean exclusive, Connection c, Partitions.Step work) throws SQLException {
    long start = System.nanoTime();
    Partitions.inTransaction(c, work);
    record(step, exclusive, start);
  }

  private void record(String step, boolean exclusive, long startNanos) {
    timings.add(new Timing(step, exclusive, Duration.ofNanos(System.nanoTime() - startNanos)));
  }
}
