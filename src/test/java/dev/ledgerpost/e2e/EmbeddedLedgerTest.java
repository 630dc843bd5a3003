package dev.ledgerpost.e2e;

import dev.ledgerpost.ledger.LedgerPart;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.lockfile.DirectoryInUse;
import dev.ledgerpost.platform.lockfile.LockFile;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The gateway's own embedded PostgreSQL: durable commits, rows that survive a restart, and a data directory
 * that a second gateway in the same JVM cannot share.
 */
class EmbeddedLedgerTest {
  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();

  static final Path dataDir = GatewayHarness.tempDir("embedded-ledger-").resolve("pg");

  private static Map<String, Object> embedded() {
    Map<String, Object> o = GatewayHarness.defaults(harness.downstream().port());
    o.put("ledger.url", "");
    o.put("ledger.dataDir", dataDir.toString());
    return o;
  }

  @Test
  void embeddedServerIsDurableAndKeepsRowsAcrossARestart() throws Exception {
    String id;
    try (GatewayHarness first = GatewayHarness.start(harness.vertx(), embedded())) {
      int port = first.gateway().part(LedgerPart.class).target().options().getPort();
      try (Connection c = DriverManager.getConnection("jdbc:postgresql://localhost:" + port + "/postgres", "postgres", "");
          Statement st = c.createStatement()) {
        assertThat(show(st, "synchronous_commit")).isEqualTo("on");
        assertThat(show(st, "fsync")).isEqualTo("on");
        assertThat(show(st, "full_page_writes")).isEqualTo("on");
        assertThat(show(st, "server_version")).startsWith("17.");
      }
      // The embedded server's disk is the data directory's: its gauges are there without ledger.diskPath.
      Matcher total = Pattern.compile("(?m)^ledgerpost_ledger_disk_total_bytes (\\S+)$").matcher(first.get("/metrics").body());
      assertThat(total.find()).as("the disk gauge").isTrue();
      assertThat(Double.parseDouble(total.group(1))).isEqualTo((double) java.nio.file.Files.getFileStore(dataDir).getTotalSpace());
      // Refused before the embedded library touches the directory, and the first keeps both its locks: a
      // descriptor of either lock file opened and closed in this JVM would have dropped them.
      long self = ProcessHandle.current().pid();
      assertThatThrownBy(() -> GatewayHarness.start(harness.vertx(), embedded()))
          .isInstanceOf(DirectoryInUse.class)
          .hasMessage("ledger.dataDir " + dataDir.toAbsolutePath() + " is in use by another gateway in this process (PID "
              + self + " holds its lock " + dataDir.toAbsolutePath().resolveSibling("pg.lock") + "); give each gateway its "
              + "own ledger.dataDir");
      assertThat(LockFile.holder(dataDir.resolveSibling("pg.lock"))).hasValue(self);
      assertThat(LockFile.holder(dataDir.resolve("epg-lock"))).as("zonky's").hasValue(self);
      try (SmtpTestClient client = new SmtpTestClient(first.smtpPort())) {
        client.reply();
        String reply = client.sendMail("a@example.com", List.of("b@example.net"), "Subject: keep me\r\n\r\nbody");
        Matcher m = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(reply);
        assertThat(m.find()).as(reply).isTrue();
        id = m.group(1);
      }
    }
    try (GatewayHarness second = GatewayHarness.start(harness.vertx(), embedded())) {
      var response = second.get("/api/v1/messages/" + id);
      assertThat(response.statusCode()).isEqualTo(200);
      assertThat(new JsonObject(response.body()).getString("status")).isEqualTo("SENT");
    }
  }

  private static String show(Statement st, String name) throws Exception {
    try (ResultSet rs = st.executeQuery("SHOW " + name)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
