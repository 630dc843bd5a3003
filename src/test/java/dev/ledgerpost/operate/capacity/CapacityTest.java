package dev.ledgerpost.operate.capacity;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The ledger's size and disk gauges (issue 20): on /metrics with the values SQL and the file system give, the oldest
 * message's age by the time in min(id), and a readiness that stays UP but says when the disk is nearly full.
 */
class CapacityTest {
  static final Path disk = GatewayHarness.tempDir("capacity-disk-");

  /** Reads every 200 ms, so that a test sees a change at once; never says the disk is low. */
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("ledger.sizeInterval", "200ms")
      .with("ledger.diskPath", disk.toString()).with("ledger.diskLowPercent", 0).afterStart(g -> {
        try (SmtpTestClient c = new SmtpTestClient(g.smtpPort())) {
          c.reply();
          for (int i = 0; i < 3; i++) {
            assertThat(c.sendMail("a@example.com", List.of("b@example.net", "c@example.net"), "Subject: m" + i + "\r\n\r\nbody"))
                .startsWith("250");
          }
        }
      });

  @Test
  void gaugesShowTheLedgersSizeRowsAndDisk() throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute("ANALYZE messages, recipients, outbox"); // reltuples is -1 (read as 0) until the first ANALYZE
      long[] sql = new long[3];
      Poll.until(Duration.ofSeconds(15), "the row gauges show ANALYZE's counts", () -> {
        sql[0] = count(st, "messages");
        sql[1] = count(st, "recipients");
        sql[2] = count(st, "outbox");
        String body = scrape();
        return value(body, "ledgerpost_ledger_rows{table=\"messages\"}") == sql[0]
            && value(body, "ledgerpost_ledger_rows{table=\"recipients\"}") == sql[1]
            && value(body, "ledgerpost_ledger_rows{table=\"outbox\"}") == sql[2];
      });
      assertThat(sql[0]).isEqualTo(3);
      assertThat(sql[1]).isEqualTo(6);
      assertThat(sql[2]).isPositive();
      String body = scrape();
      for (String table : CapacityGauges.TABLES) {
        assertThat(value(body, "ledgerpost_ledger_rows{table=\"" + table + "\"}")).as(table).isGreaterThanOrEqualTo(0);
      }
      long bytes = single(st, "SELECT pg_database_size(current_database())");
      // The database grows by a page now and then (the outbox, autovacuum): the gauge is at most a reading behind.
      assertThat(value(body, "ledgerpost_ledger_bytes")).isBetween(bytes * 0.9, bytes * 1.1).isGreaterThan(1_000_000);
      FileStore store = Files.getFileStore(disk);
      assertThat(value(body, "ledgerpost_ledger_disk_total_bytes")).isEqualTo((double) store.getTotalSpace());
      double free = store.getUsableSpace();
      assertThat(value(body, "ledgerpost_ledger_disk_free_bytes")).isBetween(free - 0.02 * store.getTotalSpace(),
          free + 0.02 * store.getTotalSpace());
      HttpResponse<String> ready = gateway.get("/health/ready", null);
      assertThat(ready.statusCode()).isEqualTo(200);
      assertThat(new JsonObject(ready.body()).fieldNames()).containsExactlyInAnyOrder("status", "ledger");
    }
  }

  @Test
  void oldestAgeFollowsTheTimeInMinId() throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      double fresh = Poll.within(Duration.ofSeconds(15), () -> value(scrape(), "ledgerpost_ledger_oldest_seconds") > 0)
          ? value(scrape(), "ledgerpost_ledger_oldest_seconds") : -1;
      assertThat(fresh).as("the relayed messages are seconds old").isBetween(0.0, 600.0);
      // An id three days old, received now: the gauge goes by the id (what time partitions and retention go by).
      UUID old = LedgerIds.lowest(Instant.now().minus(Duration.ofDays(3)));
      try (PreparedStatement insert = c.prepareStatement("INSERT INTO messages (id, intake, mail_from, size_bytes, "
          + "body_sha256, route, status, version, received_at) VALUES (?, 'SMTP', 'old@example.com', 1, '00', 'r', 'PENDING', 1, now())")) {
        insert.setObject(1, old);
        insert.executeUpdate();
      }
      try {
        Poll.until(Duration.ofSeconds(15), "the oldest age is three days", () ->
            Math.abs(value(scrape(), "ledgerpost_ledger_oldest_seconds") - Duration.ofDays(3).toSeconds()) < 60);
      } finally {
        st.executeUpdate("DELETE FROM messages WHERE id = '" + old + "'");
      }
      Poll.until(Duration.ofSeconds(15), "the oldest age is the relayed messages' again", () ->
          value(scrape(), "ledgerpost_ledger_oldest_seconds") < 600);
      UUID min = UUID.fromString(text(st, "SELECT id::text FROM messages ORDER BY id LIMIT 1"));
      double expected = (System.currentTimeMillis() - LedgerIds.time(min).orElseThrow().toEpochMilli()) / 1000.0;
      assertThat(value(scrape(), "ledgerpost_ledger_oldest_seconds")).isBetween(expected - 5, expected + 5);
    }
  }

  /** Gateways of their own: a disk that reads as nearly full, none in sight, a disk path that is not there. */
  @Nested
  class Readiness {
    @RegisterExtension
    final GatewayHarness own = GatewayHarness.extension().manual();

    @Test
    void aNearlyFullDiskKeepsReadinessUpWithAReason() throws Exception {
      // Every real file system has less than 100 % free: the threshold is crossed without filling a disk.
      Map<String, Object> config = GatewayHarness.defaults(own.downstream().port());
      config.put("ledger.diskPath", disk.toString());
      config.put("ledger.diskLowPercent", 100);
      own.begin(config);
      HttpResponse<String> ready = own.get("/health/ready", null);
      assertThat(ready.statusCode()).isEqualTo(200);
      JsonObject body = new JsonObject(ready.body());
      assertThat(body.getString("status")).isEqualTo("UP");
      assertThat(body.getString("ledger")).isEqualTo("UP");
      assertThat(body.getString("reason")).startsWith("the ledger's disk is nearly full: ")
          .contains(" at " + disk + ", below ledger.diskLowPercent 100%");
      // And the gateway still takes mail.
      try (SmtpTestClient c = new SmtpTestClient(own.smtpPort())) {
        c.reply();
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: s\r\n\r\nbody")).startsWith("250");
      }
    }

    @Test
    void anExternalLedgerWithoutDiskPathHasNoDiskGauges() throws Exception {
      own.begin(GatewayHarness.defaults(own.downstream().port()));
      String body = own.get("/metrics", null).body();
      assertThat(body).containsPattern("(?m)^ledgerpost_ledger_bytes ").doesNotContain("ledgerpost_ledger_disk_")
          .doesNotContain("ledgerpost_ledger_synchronous_standbys"); // only with ledger.requireSynchronousStandby
      assertThat(new JsonObject(own.get("/health/ready", null).body()).containsKey("reason")).isFalse();
    }

    @Test
    void aDiskPathThatIsNoDirectoryIsOneLineAtStart() {
      Path missing = disk.resolve("no-such-dir");
      Map<String, Object> config = GatewayHarness.defaults(own.downstream().port());
      config.put("ledger.diskPath", missing.toString());
      assertThatThrownBy(() -> own.begin(config)).isInstanceOf(StartFailure.class)
          .hasMessage("ledger.diskPath " + missing + ": no such directory; name a directory on the file system that holds "
              + "the ledger's database, or leave it empty");
    }
  }

  private static String scrape() throws Exception {
    return gateway.get("/metrics", null).body();
  }

  static double value(String scrape, String series) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " ([0-9.eE+-]+|NaN)$").matcher(scrape);
    assertThat(m.find()).as(series).isTrue();
    return Double.parseDouble(m.group(1));
  }

  private static long count(Statement st, String table) throws Exception {
    return single(st, "SELECT count(*) FROM " + table);
  }

  private static long single(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String text(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
