package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every metric a dashboard panel or an alert rule names exists on a live gateway's /metrics. */
class MetricsContractTest {
  static final Pattern METRIC = Pattern.compile("\\bledgerpost_[a-z_]+");
  static String scrape;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("stale.scanInterval", "200ms")
      // An external ledger's disk gauges exist only where its file system is in sight: say where, as on its host.
      .with("ledger.diskPath", GatewayHarness.tempDir("metrics-disk-").toString())
      // The synchronous standbys' gauge exists only where the check is asked for.
      .with("ledger.requireSynchronousStandby", true).configure((g, o) -> {
    // A webhook endpoint, so that its counters exist (they are per endpoint).
    WebhookReceiver receiver = GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(200)));
    o.put("webhooks.endpoints", List.of(Map.of("name", "probe", "url", receiver.url("/h"), "secret",
        WebhookDeliveryTest.secret(3))));
  }).afterStart(g -> {
    try (SmtpTestClient c = new SmtpTestClient(g.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: m\r\n\r\nbody")).startsWith("250");
      assertThat(c.command("NOOP")).startsWith("250");
    }
    var response = g.get("/metrics", null);
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
    scrape = response.body();
  });

  @Test
  void everyMetricOfTheDashboardAndTheAlertRulesExists() throws Exception {
    Set<String> named = new TreeSet<>();
    for (Path p : List.of(Path.of("grafana/dashboards/ledgerpost-overview.json"),
        Path.of("grafana/prometheus/ledgerpost-rules.yml"))) {
      Matcher m = METRIC.matcher(Files.readString(p));
      while (m.find()) {
        named.add(m.group());
      }
    }
    assertThat(named).hasSizeGreaterThan(10);
    Set<String> exposed = new TreeSet<>();
    for (String line : scrape.split("\n")) {
      Matcher m = Pattern.compile("^(ledgerpost_[a-z_]+)[{ ]").matcher(line);
      if (m.find()) {
        exposed.add(m.group(1));
      }
    }
    assertThat(exposed).containsAll(named);
  }

  @Test
  void pendingGaugesMatchTheLedger() throws Exception {
    try (java.sql.Connection c = dev.ledgerpost.testing.TestDatabase.connect(gateway.databaseUrl());
        java.sql.Statement st = c.createStatement()) {
      for (int i = 0; i < 3; i++) {
        st.execute("INSERT INTO messages (id, intake, mail_from, size_bytes, body_sha256, route, status, version, received_at)"
            + " VALUES (gen_random_uuid(), 'SMTP', 'old@example.com', 1, '00', 'r', 'PENDING', 1, now() - interval '"
            + (90 + i * 30) + " seconds')");
      }
      double[] sql = new double[2]; // count, oldest age
      Poll.until(Duration.ofSeconds(15), "the pending gauges agree with SQL (the stale watch rescans every 200 ms)", () -> {
        try (java.sql.ResultSet rs = st.executeQuery("SELECT count(*), extract(epoch FROM now() - min(received_at))"
            + " FROM messages WHERE status = 'PENDING'")) {
          rs.next();
          sql[0] = rs.getDouble(1);
          sql[1] = rs.getDouble(2);
        }
        String body = gateway.get("/metrics", null).body();
        return value(body, "ledgerpost_pending_messages") == sql[0]
            && Math.abs(value(body, "ledgerpost_pending_oldest_age_seconds") - sql[1]) <= 2.0;
      });
      assertThat(sql[0]).isEqualTo(3.0);
      assertThat(sql[1]).isGreaterThanOrEqualTo(150.0);
    }
  }

  private static double value(String scrape, String gauge) {
    Matcher m = Pattern.compile("(?m)^" + gauge + " ([0-9.eE+-]+)$").matcher(scrape);
    assertThat(m.find()).as(gauge).isTrue();
    return Double.parseDouble(m.group(1));
  }

  @Test
  void theIssueNamedMetricsAreThereWithValues() {
    assertThat(scrape).contains("ledgerpost_smtp_replies_total{class=\"2xx\",code=\"250\"}");
    assertThat(scrape).contains("ledgerpost_delivery_outcomes_total{outcome=\"accepted\"} 1.0");
    assertThat(scrape).contains("ledgerpost_ledger_transaction_seconds_count{kind=\"open\"} 1");
    assertThat(scrape).contains("ledgerpost_ledger_transaction_seconds_count{kind=\"settle\"} 1");
    assertThat(scrape).contains("ledgerpost_delivery_seconds_bucket");
    assertThat(scrape).contains("ledgerpost_smtp_reply_seconds_bucket{stage=\"data\"");
    assertThat(scrape).contains("ledgerpost_ledger_retries_total{sqlstate=\"55P03\"} 0.0");
    assertThat(scrape).contains("ledgerpost_ledger_failures_total{kind=\"open\"} 0.0");
    for (String gauge : List.of("ledgerpost_smtp_sessions_active", "ledgerpost_outbox_lag_seconds", "ledgerpost_notify_clients")) {
      assertThat(scrape).containsPattern("(?m)^" + gauge + " ");
    }
    // HELP texts are there for operators.
    assertThat(scrape).contains("# HELP ledgerpost_delivery_seconds ");
  }
}
