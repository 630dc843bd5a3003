package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.LedgerIds;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.IsoFields;
import java.time.temporal.TemporalAdjusters;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The ledger's time partitions (docs/data-model.md §5.12): {@code messages} and {@code recipients} are RANGE-partitioned
 * on the message id, one partition per ISO week (UTC), bounded by {@link LedgerIds#lowest} of the week's Monday. The
 * id is a UUIDv7, so its order is the time order: the primary key stays {@code (id)} and every lookup by id prunes
 * to one partition. The two tables always have partitions of the same bounds, made and dropped in pairs.
 *
 * <p>Blocking JDBC: called from the V90 migration, from the ledger's start and from the partition job's worker thread.
 */
public final class Partitions {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Partitions.class);
  /** The partitioned tables and the column each is partitioned on. */
  public static final List<Table> TABLES = List.of(new Table("messages", "id"), new Table("recipients", "message_id"));
  /** Weeks made ahead of the current one: a month, so a job that misses passes for weeks changes nothing. */
  public static final int AHEAD_WEEKS = 4;
  /**
   * How long a partition's DDL waits for its lock. Short, because a waiting ACCESS EXCLUSIVE request queues every
   * open and settle behind it: it must stay well under the hot path's own ledger.lockTimeout (≤ 1 s).
   */
  public static final Duration DDL_LOCK_TIMEOUT = Duration.ofMillis(300);
  /** Attempts of one DDL transaction that timed out on its lock before the step gives up (until the next pass). */
  static final int DDL_ATTEMPTS = 10;
  /** Serialises the partition DDL of every node (advisory lock class "LR", 0x4C52). */
  private static final String DDL_LOCK = "SELECT pg_advisory_xact_lock(" + 0x4C52 + ", 1)";
  private static final String BOUND = "'([0-9a-f-]{36})'";
  private static final Pattern RANGE = Pattern.compile("FOR VALUES FROM \\((MINVALUE|" + BOUND + ")\\) TO \\((MAXVALUE|" + BOUND + ")\\)");

  /** A partitioned table and its partition key. */
  public record Table(String name, String key) {}

  /**
   * One partition: {@code from} is null for MINVALUE (the pre-V90 partition), both bounds are null for the DEFAULT
   * partition.
   */
  public record Partition(String name, UUID from, UUID to, boolean isDefault) {
    /** Whether any id of {@code [lo, hi)} would belong here. */
    boolean overlaps(UUID lo, UUID hi) {
      return !isDefault && (from == null || compare(from, hi) < 0) && (to == null || compare(lo, to) < 0);
    }
  }

  private Partitions() {}

  /** Monday 00:00 UTC of the ISO week holding {@code t}. */
  public static Instant weekStart(Instant t) {
    LocalDate day = t.atZone(ZoneOffset.UTC).toLocalDate().with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY));
    return day.atStartOfDay(ZoneOffset.UTC).toInstant();
  }

  /** {@code messages_y2025w07}: the ISO week-based year and week of {@code weekStart}. */
  public static String name(String table, Instant weekStart) {
    LocalDate day = weekStart.atZone(ZoneOffset.UTC).toLocalDate();
    return "%s_y%04dw%02d".formatted(table, day.get(IsoFields.WEEK_BASED_YEAR), day.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR));
  }

  /** PostgreSQL's order of uuids: unsigned, byte by byte (UUID.compareTo compares signed longs). */
  public static int compare(UUID a, UUID b) {
    int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
    return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
  }

  /** The partitions of {@code parent}, ordered by their lower bound (MINVALUE first, DEFAULT last). */
  public static List<Partition> list(Connection c, String parent) throws SQLException {
    List<Partition> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT p.relname, pg_get_expr(p.relpartbound, p.oid) AS bound
          FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
         WHERE i.inhparent = to_regclass(?)""")) {
      ps.setString(1, parent);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(parse(rs.getString(1), rs.getString(2)));
        }
      }
    }
    out.sort((a, b) -> a.isDefault() != b.isDefault() ? Boolean.compare(a.isDefault(), b.isDefault())
        : a.from() == null ? -1 : b.from() == null ? 1 : compare(a.from(), b.from()));
    return out;
  }

  static Partition parse(String name, String bound) {
    if ("DEFAULT".equals(bound)) {
      return new Partition(name, null, null, true);
    }
    Matcher m = RANGE.matcher(bound);
    if (!m.matches()) {
      throw new IllegalStateException("partition " + name + " has a bound this gateway does not know: " + bound);
    }
    return new Partition(name, m.group(2) == null ? null : UUID.fromString(m.group(2)),
        m.group(4) == null ? null : UUID.fromString(m.group(4)), false);
  }

  /**
   * Makes the pair of partitions of every ISO week from the one holding {@code from} for {@code weeks} weeks,
   * skipping those that exist or overlap one that does (the pre-V90 partition); answers the names it made. Each week
   * is one short transaction (the parents' ACCESS EXCLUSIVE lock for a catalog change, waiting at most
   * {@link #DDL_LOCK_TIMEOUT}), serialised across nodes by an advisory lock. {@code c} must be in autocommit mode.
   *
   * @throws SQLException when a week could not be made: its rows go to the DEFAULT partition until a later pass
   */
  public static List<String> ensureWeeks(Connection c, Instant from, int weeks) throws SQLException {
    List<String> made = new ArrayList<>();
    // Read once for all the weeks (each read is a catalog query; a gateway's start asks for six weeks, twice), and
    // again under the lock before a week is made.
    List<Partition> existing = list(c, "messages");
    Instant week = weekStart(from);
    for (int i = 0; i < weeks; i++, week = week.plus(Duration.ofDays(7))) {
      Instant start = week;
      UUID lo = LedgerIds.lowest(start);
      UUID hi = LedgerIds.lowest(start.plus(Duration.ofDays(7)));
      if (existing.stream().anyMatch(p -> p.overlaps(lo, hi))) {
        continue;
      }
      inTransaction(c, st -> {
        st.execute(DDL_LOCK);
        if (list(c, "messages").stream().anyMatch(p -> p.overlaps(lo, hi))) {
          return; // another node made it meanwhile
        }
        for (Table t : TABLES) {
          // fillfactor 80 as the pre-V90 tables (V40): room on each page for the settle's HOT updates.
          st.execute("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s') WITH (fillfactor = 80)"
              .formatted(name(t.name(), start), t.name(), lo, hi));
        }
        made.add(name("messages", start));
      });
    }
    return made;
  }

  /**
   * An autovacuum of a ledger table (a freshly loaded or busy one) holds SHARE UPDATE EXCLUSIVE for as long as it
   * runs. PostgreSQL cancels it for a waiting lock only after deadlock_timeout (1 s), longer than the DDL may wait,
   * so the DDL would time out behind it again and again. Cancelling it is what PostgreSQL itself does; the table is
   * vacuumed again later. Never an anti-wraparound run (PostgreSQL does not cancel those either). Needs the right to
   * signal the worker (a superuser, or pg_signal_autovacuum_worker from PostgreSQL 18); without it, nothing happens.
   */
  static int cancelAutovacuum(Connection c) {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("""
            SELECT count(*) FILTER (WHERE pg_cancel_backend(a.pid)) FROM pg_stat_activity a
             WHERE a.backend_type = 'autovacuum worker' AND a.query NOT LIKE '%to prevent wraparound%'
               AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.database = (SELECT oid FROM pg_database
                                                                                       WHERE datname = current_database())
                             AND l.relation::regclass::text ~ '^(messages|recipients|resolutions|stale_raises|idempotency_keys|reconcile_proposals)')""")) {
      rs.next();
      return rs.getInt(1);
    } catch (SQLException e) {
      return 0;
    }
  }

  /** One DDL step. */
  public interface Step {
    void run(Statement st) throws SQLException;
  }

  /**
   * Runs {@code step} in one transaction whose locks wait at most {@link #DDL_LOCK_TIMEOUT}; a lock timeout (55P03)
   * or a deadlock (40P01) rolls it back and tries again, up to {@link #DDL_ATTEMPTS} times. Restores autocommit.
   */
  public static void inTransaction(Connection c, Step step) throws SQLException {
    for (int attempt = 1; ; attempt++) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.execute("SET LOCAL lock_timeout = '" + DDL_LOCK_TIMEOUT.toMillis() + "ms'");
        step.run(st);
        c.commit();
        return;
      } catch (SQLException e) {
        c.rollback();
        boolean lockWait = "55P03".equals(e.getSQLState()) || "40P01".equals(e.getSQLState());
        if (!lockWait || attempt == DDL_ATTEMPTS) {
          throw e;
        }
        int cancelled = cancelAutovacuum(c);
        LOG.info("ledger partition DDL waited {} for its lock ({}; {} autovacuum worker(s) on ledger tables cancelled); "
            + "attempt {} of {}", DDL_LOCK_TIMEOUT, e.getSQLState(), cancelled, attempt + 1, DDL_ATTEMPTS);
      } finally {
        c.setAutoCommit(true);
      }
    }
  }
}
