package dev.ledgerpost.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every metric a dashboard panel or an alert rule names exists on a live gateway's /metrics. */
class MetricsContractTest {
  static final Pattern METRIC = Pattern.compile("\\bledgerpost_[a-z_]+");
  static Vertx vertx;
  static GatewayHarness gateway;
  static String scrape;

  @BeforeAll
  static void start() throws Exception {
    vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    gateway = GatewayHarness.start(vertx, GatewayHarness.defaults(downstream.port()));
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: m\r\n\r\nbody")).startsWith("250");
      assertThat(c.command("NOOP")).startsWith("250");
    }
    var response = gateway.get("/metrics", null);
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
    scrape = response.body();
  }

  @AfterAll
  static void stop() throws Exception {
    gateway.close();
    GatewayHarness.await(vertx.close());
  }

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
