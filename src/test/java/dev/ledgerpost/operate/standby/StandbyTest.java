package dev.ledgerpost.operate.standby;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.StreamingStandby;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * ledger.requireSynchronousStandby (issue 29; docs/design.md §8.7): the count of synchronous standbys as a gauge, and a
 * reason on a readiness that stays 200, against the suite's server (no standby) and against a primary of its own with a
 * real streaming standby, whose state the test switches between sync and async.
 */
class StandbyTest {
  private static final String LOGGER = StandbyVerticle.class.getName();
  private static final String GAUGE = "ledgerpost_ledger_synchronous_standbys";

  /** The suite's server has no standby; its disk reads as nearly full too, so that both remarks are there. */
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("ledger.requireSynchronousStandby", true)
      .with("ledger.diskPath", GatewayHarness.tempDir("standby-disk-").toString()).with("ledger.diskLowPercent", 100);

  @Test
  void noStandbyIsAReasonOnAReadyGatewayAndAZeroGauge() throws Exception {
    HttpResponse<String> ready = gateway.get("/health/ready", null);
    assertThat(ready.statusCode()).isEqualTo(200);
    JsonObject body = new JsonObject(ready.body());
    assertThat(body.getString("status")).isEqualTo("UP");
    assertThat(body.getString("ledger")).isEqualTo("UP");
    // Every remark, in the parts' order: the disk's does not hide the standby's.
    assertThat(body.getString("reason")).startsWith("the ledger's disk is nearly full: ")
        .endsWith("; the ledger has no synchronous standby (no pg_stat_replication row in sync or quorum state), so a"
            + " commit it acknowledges exists on one server only");
    assertThat(gauge(gateway)).isEqualTo("0.0");
    // And it still takes mail: PostgreSQL, not the gateway, decides whether a commit waits for a standby.
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: s\r\n\r\nbody")).startsWith("250");
    }
  }

  /** A primary with a streaming standby of the test's own, and the gateway on it as a role that owns its database. */
  @Nested
  class RealStandby {
    @RegisterExtension
    final GatewayHarness own = GatewayHarness.extension().manual();

    @Test
    void theCountFollowsTheStandbyOnceTheRoleMaySeeIt() throws Exception {
      StreamingStandby standby = own.closeAfter(StreamingStandby.start());
      try (Connection c = standby.superuser(); Statement st = c.createStatement()) {
        st.execute("CREATE ROLE ledgerpost LOGIN"); // no superuser, no pg_monitor
        st.execute("CREATE DATABASE ledger OWNER ledgerpost");
      }
      Map<String, Object> config = GatewayHarness.defaults(own.downstream().port());
      config.put("ledger.url", standby.url("ledgerpost", "ledger"));
      config.put("ledger.requireSynchronousStandby", true);
      config.put("node.heartbeatInterval", "100ms");
      try (LogCapture log = LogCapture.of(LOGGER)) {
        own.begin(config);

        // The role sees the standby's row with its state NULL: that is no count of 0, and the reason says what to grant.
        assertThat(gauge(own)).isEqualTo("NaN");
        assertThat(reason()).isEqualTo("cannot tell whether the ledger has a synchronous standby: the ledger's role"
            + " ledgerpost may not see pg_stat_replication's sync_state (only superusers and members of pg_read_all_stats"
            + " may); GRANT pg_monitor TO ledgerpost");
        assertThat(log.warningsContaining("cannot tell")).hasSize(1);

        try (Connection c = standby.superuser(); Statement st = c.createStatement()) {
          st.execute("GRANT pg_monitor TO ledgerpost");
        }
        Poll.until(Duration.ofSeconds(10), "the gauge counts the synchronous standby", () -> gauge(own).equals("1.0"));
        assertThat(reason()).isNull();
        assertThat(infos(log)).hasSize(1);

        // Async: the standby still streams, but a commit no longer waits for it.
        standby.synchronousNames("");
        Poll.until(Duration.ofSeconds(10), "the gauge reads 0", () -> gauge(own).equals("0.0"));
        assertThat(reason()).startsWith("the ledger has no synchronous standby");
        Thread.sleep(1000); // ten heartbeats at 0
        assertThat(log.warningsContaining("the ledger has no synchronous standby")).as("one line, not one per heartbeat")
            .hasSize(1);
        try (SmtpTestClient c = new SmtpTestClient(own.smtpPort())) {
          c.reply();
          assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: s\r\n\r\nbody")).startsWith("250");
        }

        standby.synchronousNames("*");
        Poll.until(Duration.ofSeconds(10), "the gauge reads 1 again", () -> gauge(own).equals("1.0"));
        assertThat(reason()).isNull();
        Thread.sleep(1000);
        assertThat(infos(log)).hasSize(2);
        assertThat(log.warningsContaining("")).hasSize(2);
      }
    }

    private String reason() throws Exception {
      HttpResponse<String> ready = own.get("/health/ready", null);
      assertThat(ready.statusCode()).isEqualTo(200);
      return new JsonObject(ready.body()).getString("reason");
    }

    private static List<LogCapture.Line> infos(LogCapture log) {
      return log.linesContaining("synchronous standby(s)").stream()
          .filter(l -> l.level() == ch.qos.logback.classic.Level.INFO).toList();
    }
  }

  /** The gauge's value as /metrics writes it ("0.0", "NaN"). */
  private static String gauge(GatewayHarness g) throws Exception {
    Matcher m = Pattern.compile("(?m)^" + GAUGE + " (\\S+)$").matcher(g.get("/metrics", null).body());
    assertThat(m.find()).as(GAUGE).isTrue();
    return m.group(1);
  }
}
