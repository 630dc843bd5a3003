package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The follower across a restart of its gateway (docs/design.md §8.13): it resumes from the position it saved with its
 * facts, in the file it was reading even when that file was renamed away while the gateway was down (its end first,
 * then the new file), and records every line once, with one event each.
 */
class TrackingRestartTest {
  static final Duration WAIT = Duration.ofSeconds(30);

  /** The ledger and the smarthost; the gateways that follow the log are this test's own, one after the other. */
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as ABCDEF0" + n);
        }
      });

  private static String line(String to, String dsn, String status) {
    String at = DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(Instant.now().truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    return at + " smarthost postfix/smtp[7]: ABCDEF01: to=<" + to + ">, relay=mx.example.net[192.0.2.1]:25, delay=1, dsn=" + dsn
        + ", status=" + status + " (" + dsn + " said so)\n";
  }

  private static void append(Path f, String text) throws Exception {
    Files.writeString(f, text, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  private GatewayHarness follower(Vertx vertx, Path log) throws Exception {
    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("ledger.url", gateway.databaseUrl());
    config.put("node.id", "tracker");
    config.put("tracking.postfixLog", log.toString());
    config.put("tracking.pollInterval", "50ms");
    return GatewayHarness.start(vertx, config);
  }

  private long facts() throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM delivery_facts");
  }

  @Test
  void aRestartResumesWhereItStoppedEvenInAFileRenamedMeanwhile() throws Exception {
    String url = gateway.databaseUrl();
    Path log = GatewayHarness.tempDir("tracking-restart-").resolve("mail.log");
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("s@example.com", List.of("a@example.net", "b@example.net"), "Subject: r\r\n\r\nbody")).startsWith("250");
    }
    append(log, line("a@example.net", "4.2.2", "deferred"));

    Vertx first = Vertx.vertx();
    GatewayHarness one = follower(first, log);
    try {
      Poll.until(WAIT, "the first fact", () -> facts() == 1);
      Poll.until(WAIT, "its position saved", () -> LedgerRows.count(url,
          "SELECT position FROM tracking_log_positions WHERE node_id = 'tracker'") == Files.size(log));
    } finally {
      one.close();
      GatewayHarness.await(first.close());
    }

    // While no gateway follows: a line more in the file, which is then renamed away, and a line in the new one.
    append(log, line("a@example.net", "2.0.0", "sent"));
    Files.move(log, log.resolveSibling("mail.log.1"));
    append(log, line("b@example.net", "5.1.1", "bounced"));

    Vertx second = Vertx.vertx();
    GatewayHarness two = follower(second, log);
    try {
      Poll.until(WAIT, "three facts", () -> facts() >= 3);
      Poll.until(WAIT, "the new file's position saved", () -> LedgerRows.count(url,
          "SELECT position FROM tracking_log_positions WHERE node_id = 'tracker'") == Files.size(log));
    } finally {
      two.close();
      GatewayHarness.await(second.close());
    }
    assertThat(LedgerRows.string(url, "SELECT string_agg(idx || ':' || state, ',' ORDER BY id) FROM delivery_facts"))
        .isEqualTo("0:deferred,0:delivered,1:bounced");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type LIKE 'recipient.%'")).isEqualTo(3);
  }
}
