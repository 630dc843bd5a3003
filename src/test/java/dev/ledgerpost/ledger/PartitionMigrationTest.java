package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.LedgerIds;

import dev.ledgerpost.platform.db.DatabaseTarget;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * V90 on a populated ledger (docs/data-model.md §5.12): a million rows (500,000 messages and their 500,000 recipients,
 * ids spread over the last ten weeks) made at V80, then the migration while another connection keeps opening,
 * settling and reading messages as the gateway does. The migration's exclusive steps and the writer's slowest
 * statement are measured and printed; afterwards every row is there, a lookup by id reads one partition, and a
 * gateway on the migrated ledger relays.
 */
class PartitionMigrationTest {
  static final int MESSAGES = 500_000;
  /** Generous: on the 2-core test machine the swap takes milliseconds; a rewrite of the tables would take many seconds. */
  static final Duration BOUND = Duration.ofSeconds(2);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  @Test
  void aMillionRowLedgerMigratesWhileAWriterWritesAndTheLongestLockIsShort() throws Exception {
    String url = TestDatabase.newEmptyDatabase();
    DatabaseTarget target = DatabaseTarget.fromUrl(url, Duration.ofMillis(1000));
    LedgerPartitionsMigration v90 = new LedgerPartitionsMigration();
    Flyway at80 = flyway(target, v90).target("80").load();
    at80.migrate();
    generate(url);

    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong maxNanos = new AtomicLong();
    AtomicLong written = new AtomicLong();
    List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newSingleThreadExecutor();
    Future<?> writer;
    Instant migrated;
    long tookMillis;
    try (Connection w = TestDatabase.connect(url)) {
      try (Statement st = w.createStatement()) {
        st.execute("SET lock_timeout = '1000ms'"); // as every ledger connection (ledger.lockTimeout)
      }
      writeOne(w, maxNanos); // warmed up, so its latencies are the migration's
      maxNanos.set(0);
      writer = pool.submit(() -> {
        while (!stop.get()) {
          try {
            writeOne(w, maxNanos);
            written.incrementAndGet();
          } catch (SQLException e) {
            errors.add(e.getSQLState() + " " + e.getMessage());
          }
        }
        return null;
      });
      waitFor(() -> written.get() >= 50);
      maxNanos.set(0); // from here on: the writer's statements while the migration runs
      long start = System.nanoTime();
      flyway(target, v90).load().migrate();
      tookMillis = (System.nanoTime() - start) / 1_000_000;
      long before = written.get();
      waitFor(() -> written.get() >= before + 50); // the writer goes on after the swap too
      stop.set(true);
      writer.get();
      migrated = Instant.now();
    } finally {
      stop.set(true);
      pool.shutdown();
    }

    Duration exclusive = v90.timings().stream().filter(LedgerPartitionsMigration.Timing::exclusive)
        .map(LedgerPartitionsMigration.Timing::took).max(Duration::compareTo).orElseThrow();
    Duration writerMax = Duration.ofNanos(maxNanos.get());
    System.out.printf("V90 on %,d messages + %,d recipients: %d ms in all; longest exclusive step %d ms; steps %s; "
            + "concurrent writer: %,d opens+settles+reads, slowest statement %d ms (its retries included), lock timeouts retried %d, "
            + "errors %s%n", MESSAGES, MESSAGES,
        tookMillis, exclusive.toMillis(), v90.timings().stream().map(t -> t.step() + "=" + t.took().toMillis() + "ms").toList(),
        written.get(), writerMax.toMillis(), LOCK_TIMEOUTS_RETRIED.get(), errors);
    assertThat(errors).as("no write failed after the attempts a ledger connection makes").isEmpty();
    assertThat(exclusive).isLessThan(BOUND);
    assertThat(writerMax).isLessThan(BOUND);

    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      long extra = written.get() + 1;
      assertThat(count(st, "SELECT count(*) FROM messages")).isEqualTo(MESSAGES + extra);
      assertThat(count(st, "SELECT count(*) FROM recipients")).isEqualTo(MESSAGES + extra);
      assertThat(count(st, "SELECT count(*) FROM ONLY messages_default")).isZero();
      assertThat(string(st, "SELECT relkind::text FROM pg_class WHERE relname = 'messages'")).isEqualTo("p");
      String someId = string(st, "SELECT id::text FROM messages ORDER BY id OFFSET 1234 LIMIT 1");
      String plan = plan(st, "SELECT * FROM messages WHERE id = '" + someId + "'");
      assertThat(scans(plan)).as(plan).containsExactly("messages_before_" + Partitions.name("", boundWeek(migrated)).substring(1));
      String recipientsPlan = plan(st, "SELECT * FROM recipients WHERE message_id = '" + someId + "'");
      assertThat(scans(recipientsPlan)).as(recipientsPlan).hasSize(1);
      UUID future = LedgerIds.lowest(Partitions.weekStart(migrated).plus(Duration.ofDays(21)).plusSeconds(5));
      assertThat(scans(plan(st, "SELECT * FROM messages WHERE id = '" + future + "'")))
          .containsExactly(Partitions.name("messages", Partitions.weekStart(migrated).plus(Duration.ofDays(21))));
      assertThat(string(st, "SELECT pg_get_viewdef('outbox_events')")).as("the view reads the parent")
          .contains("JOIN messages m").doesNotContain("messages_before");
    }

    // The gateway on the migrated ledger: its group-commit open and settle write to the partitions.
    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("ledger.url", url);
    gateway.begin(config);
    List<UUID> relayed = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
        client.reply();
        String reply = client.sendMail("a@example.com", List.of("b@example.net", "c@example.net"),
            "Message-ID: <partitioned-" + i + "@example.com>\r\nSubject: s\r\n\r\nbody");
        assertThat(reply).startsWith("250 2.0.0");
        Matcher m = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").matcher(reply);
        assertThat(m.find()).isTrue();
        relayed.add(UUID.fromString(m.group()));
      }
    }
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      for (UUID id : relayed) {
        assertThat(string(st, "SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("SENT");
        assertThat(count(st, "SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'ACCEPTED'"))
            .isEqualTo(2);
      }
    }
    assertThat(gateway.get("/api/v1/messages/" + relayed.get(0)).statusCode()).isEqualTo(200);
  }

  /**
   * A new ledger is partitioned on its first start: the log says so in one short, calm line at INFO (that it was empty,
   * how long it took); the timing of every step, a screenful, is at DEBUG only.
   */
  @Test
  void aNewEmptyLedgerSaysInOneShortLineThatItWasPartitioned() throws Exception {
    DatabaseTarget target = DatabaseTarget.fromUrl(TestDatabase.newEmptyDatabase(), Duration.ofMillis(1000));
    LedgerPartitionsMigration v90 = new LedgerPartitionsMigration();
    List<LogCapture.Line> lines;
    try (LogCapture log = LogCapture.at(LedgerPartitionsMigration.class.getName(), ch.qos.logback.classic.Level.DEBUG)) {
      flyway(target, v90).load().migrate();
      lines = log.linesContaining("");
    }
    List<String> info = lines.stream().filter(l -> l.level().isGreaterOrEqual(ch.qos.logback.classic.Level.INFO))
        .map(LogCapture.Line::message).toList();
    assertThat(info).as("one line at INFO or above").singleElement().asString()
        .startsWith("V90: the ledger is partitioned by week").contains(" ms; it was empty")
        .doesNotContain("Timing[", "PT").hasSizeLessThan(120);
    assertThat(lines).filteredOn(l -> l.level() == ch.qos.logback.classic.Level.DEBUG).map(LogCapture.Line::message)
        .as("the steps' timings, for whoever measures").singleElement().asString().startsWith("V90 steps: ").contains("swap");
    assertThat(v90.timings()).isNotEmpty();
  }

  /** A populated ledger's line counts its messages and names where they stay. */
  @Test
  void theLineOfAPopulatedLedgerCountsItsMessages() {
    LedgerPartitionsMigration v90 = new LedgerPartitionsMigration();
    assertThat(v90.summary(234_567, "messages_before_y2026w51", Duration.ofMillis(2345)))
        .isEqualTo("V90: the ledger is partitioned by week (docs/data-model.md §5.12) in 2345 ms; its 234,567 messages stay in "
            + "messages_before_y2026w51, the longest lock took 0 ms");
    assertThat(v90.summary(LedgerPartitionsMigration.COUNTED + 1, "messages_before_y2026w51", Duration.ofMillis(2345)))
        .as("a long ledger is not counted to its end").contains("its more than 1,000,000 messages stay in");
  }

  static org.flywaydb.core.api.configuration.FluentConfiguration flyway(DatabaseTarget t, LedgerPartitionsMigration v90) {
    return Migrations.configure(t.jdbcUrl(), t.options().getUser(), t.options().getPassword(), v90);
  }

  static Instant boundWeek(Instant now) {
    return Partitions.weekStart(now.plus(Duration.ofDays(1))).plus(Duration.ofDays(7));
  }

  /**
   * The million rows, in the V80 schema: UUIDv7 ids spread evenly over the last ten weeks (the millisecond in the first
   * 48 bits, the row number in the random bits; both tables from one clock reading), 1 % of them PENDING. The two tables are loaded at once on two
   * connections, and, as a restore does it, the secondary index and the foreign key are made again after the rows (the
   * same schema): a million rows inserted one table after the other through them took most of this test's time.
   */
  static void generate(String url) throws Exception {
    List<String> rebuild = new ArrayList<>();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("""
          SELECT format('DROP INDEX %s', indexrelid::regclass), pg_get_indexdef(indexrelid) FROM pg_index
           WHERE indrelid IN ('messages'::regclass, 'recipients'::regclass)
             AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid)
          UNION ALL
          SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', conrelid::regclass, conname),
                 format('ALTER TABLE %s ADD CONSTRAINT %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
            FROM pg_constraint WHERE conrelid = 'recipients'::regclass AND contype = 'f'""")) {
        while (rs.next()) {
          rebuild.add(rs.getString(1));
          rebuild.add(rs.getString(2));
        }
      }
      assertThat(rebuild).as("messages' secondary index and recipients' foreign key")
          .contains("DROP INDEX messages_open_idx", "ALTER TABLE recipients DROP CONSTRAINT recipients_message_id_fkey");
      for (int i = 0; i < rebuild.size(); i += 2) {
        st.execute(rebuild.get(i));
      }
      String rows = """
          (SELECT i, %d::bigint - 70 * 86400000::bigint + i * (70 * 86400000::bigint / %d) AS ms
             FROM generate_series(1, %d) AS i) AS gen""".formatted(System.currentTimeMillis(), MESSAGES, MESSAGES);
      String id = "(lpad(to_hex(ms), 12, '0') || '7000' || '8' || lpad(to_hex(i), 15, '0'))::uuid";
      ExecutorService loaders = Executors.newFixedThreadPool(2);
      try {
        List<Future<Void>> loads = loaders.invokeAll(List.of(
            load(url, """
                INSERT INTO messages (id, intake, mail_from, size_bytes, body_sha256, route, status, version, received_at,
                                      settled_at)
                SELECT %s, 'SMTP', 'a@example.com', 1000, repeat('0', 64), 'smarthost:127.0.0.1:25',
                       CASE WHEN i %% 100 = 0 THEN 'PENDING' ELSE 'SENT' END, CASE WHEN i %% 100 = 0 THEN 1 ELSE 2 END,
                       to_timestamp(ms / 1000.0), CASE WHEN i %% 100 = 0 THEN NULL ELSE to_timestamp(ms / 1000.0) END
                  FROM %s""".formatted(id, rows)),
            load(url, """
                INSERT INTO recipients (message_id, idx, address, status)
                SELECT %s, 0, 'b' || i || '@example.net', CASE WHEN i %% 100 = 0 THEN 'PENDING' ELSE 'ACCEPTED' END
                  FROM %s""".formatted(id, rows))));
        for (Future<Void> load : loads) {
          load.get();
        }
      } finally {
        loaders.shutdown();
      }
      for (int i = 1; i < rebuild.size(); i += 2) {
        st.execute(rebuild.get(i));
      }
      st.execute("ANALYZE messages");
      st.execute("ANALYZE recipients");
    }
  }

  private static java.util.concurrent.Callable<Void> load(String url, String sql) {
    return () -> {
      try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
        st.execute(sql);
      }
      return null;
    };
  }

  /** One message as the gateway writes it: opened (message and recipient), settled, read back by id. */
  static void writeOne(Connection c, AtomicLong maxNanos) throws SQLException {
    UUID id = LedgerIds.next();
    timed(c, maxNanos, """
        WITH m AS (INSERT INTO messages (id, intake, mail_from, size_bytes, body_sha256, route, status, version, received_at)
                   VALUES (?, 'SMTP', 'w@example.com', 10, 'x', 'r', 'PENDING', 1, now()) RETURNING id)
        INSERT INTO recipients (message_id, idx, address, status) SELECT id, 0, 'r@example.net', 'PENDING' FROM m""", id);
    timed(c, maxNanos, """
        WITH m AS (UPDATE messages SET status = 'SENT', version = 2, settled_at = now()
                    WHERE id = ANY(ARRAY[?]::uuid[]) AND status = 'PENDING' RETURNING id)
        UPDATE recipients SET status = 'ACCEPTED' WHERE message_id IN (SELECT id FROM m)""", id);
    timed(c, maxNanos, "SELECT status, version FROM messages WHERE id = ?", id);
  }

  /** Lock timeouts the writer met and tried again, as the gateway would. */
  static final AtomicLong LOCK_TIMEOUTS_RETRIED = new AtomicLong();

  /**
   * One statement (its own transaction) as a ledger connection runs it: a lock timeout is tried again, at most
   * TransactionPolicy.MAX_ATTEMPTS in all, as the gateway's TransactionPolicy does (docs/contract.md §2.2), so what counts is
   * what a client would meet: a write that failed after its attempts, or one slower than BOUND, its attempts included.
   */
  private static void timed(Connection c, AtomicLong maxNanos, String sql, UUID id) throws SQLException {
    long start = System.nanoTime();
    for (int attempt = 1; ; attempt++) {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setObject(1, id);
        ps.execute();
        break;
      } catch (SQLException e) {
        if (!"55P03".equals(e.getSQLState()) || attempt == dev.ledgerpost.platform.db.TransactionPolicy.MAX_ATTEMPTS) {
          throw e;
        }
        LOCK_TIMEOUTS_RETRIED.incrementAndGet();
      }
    }
    maxNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
  }

  private static void waitFor(java.util.concurrent.Callable<Boolean> condition) throws Exception {
    dev.ledgerpost.testing.Poll.until(Duration.ofSeconds(60), "the concurrent writer to write", condition);
  }

  static long count(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static String string(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  static String plan(Statement st, String sql) throws SQLException {
    StringBuilder out = new StringBuilder();
    try (ResultSet rs = st.executeQuery("EXPLAIN " + sql)) {
      while (rs.next()) {
        out.append(rs.getString(1)).append('\n');
      }
    }
    return out.toString();
  }

  /** The relations a plan reads ("... on messages_y2025w07 ..."). */
  static List<String> scans(String plan) {
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile(" on ((?:messages|recipients)_\\w+)").matcher(plan);
    while (m.find()) {
      String name = m.group(1);
      if (!name.endsWith("_pkey") && !name.endsWith("_idx") && !out.contains(name)) {
        out.add(name);
      }
    }
    return out;
  }
}
