package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
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
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The follower across a restart of its gateway (docs/design.md §8.13): it resumes from the position it saved with its
 * facts, in the file it was reading even when that file was renamed away while the gateway was down (its end first,
 * then the new file), also when it was compressed meanwhile (logrotate's {@code compress}: its unread end is read from
 * the gzip'd file), then every file rotated after it (several rotations while down) and the current file, and records
 * every line once, with one event each; a file that cannot be found is one warning.
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

  /** The facts recorded, in order, as idx:state. */
  private String recorded() throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), "SELECT string_agg(idx || ':' || state, ',' ORDER BY id) FROM delivery_facts");
  }

  /** Whether the follower's saved position is {@code log}'s end (its size). */
  private boolean positionAtEndOf(Path log) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT position FROM tracking_log_positions WHERE node_id = 'tracker'")
        == Files.size(log);
  }

  interface WhileFollowing {
    void run() throws Exception;
  }

  /** Starts a gateway that follows {@code log}, runs {@code check} while it runs, then stops it and its Vert.x. */
  private void following(Path log, WhileFollowing check) throws Exception {
    Vertx vertx = Vertx.vertx();
    GatewayHarness follower = follower(vertx, log);
    try {
      check.run();
    } finally {
      follower.close();
      GatewayHarness.await(vertx.close());
    }
  }

  /**
   * Relays one message to a@ and b@, appends a deferral of a@ to {@code log}, follows the log until that line is a fact
   * and the position saved, stops.
   */
  private void followFirstFactThenStop(Path log) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("s@example.com", List.of("a@example.net", "b@example.net"), "Subject: r\r\n\r\nbody")).startsWith("250");
    }
    append(log, line("a@example.net", "4.2.2", "deferred"));
    following(log, () -> {
      Poll.until(WAIT, "the first fact", () -> facts() == 1);
      Poll.until(WAIT, "its position saved", () -> positionAtEndOf(log));
    });
  }

  @Test
  void aRestartResumesWhereItStoppedEvenInAFileRenamedMeanwhile() throws Exception {
    String url = gateway.databaseUrl();
    Path log = GatewayHarness.tempDir("tracking-restart-").resolve("mail.log");
    followFirstFactThenStop(log);

    // While no gateway follows: a line more in the file, which is then renamed away, and a line in the new one.
    append(log, line("a@example.net", "2.0.0", "sent"));
    Files.move(log, log.resolveSibling("mail.log.1"));
    append(log, line("b@example.net", "5.1.1", "bounced"));

    following(log, () -> {
      Poll.until(WAIT, "three facts", () -> facts() >= 3);
      Poll.until(WAIT, "the new file's position saved", () -> positionAtEndOf(log));
    });
    assertThat(recorded()).isEqualTo("0:deferred,0:delivered,1:bounced");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'")).isEqualTo(3);
  }

  /** A log of 60 lines no fact is made of, followed by {@link #followFirstFactThenStop}. */
  private Path followedThenStopped() throws Exception {
    Path log = GatewayHarness.tempDir("tracking-restart-").resolve("mail.log");
    for (int i = 0; i < 60; i++) {
      append(log, "Dec  4 10:00:00 smarthost postfix/anvil[9]: statistics: line " + i + " that no fact is made of\n"); // beyond the window
    }
    followFirstFactThenStop(log);
    return log;
  }

  /** logrotate with {@code compress} and no {@code delaycompress}: renamed, gzip'd into a new file, the plain one removed. */
  private static void rotateAndCompress(Path log, String rotated) throws Exception {
    Path plain = log.resolveSibling("mail.log.1");
    Files.move(log, plain);
    try (var out = new GZIPOutputStream(Files.newOutputStream(log.resolveSibling(rotated)))) {
      Files.copy(plain, out);
    }
    Files.delete(plain);
  }

  @Test
  void aRestartReadsTheUnreadEndOfItsFileRotatedAndGzippedMeanwhileOnce() throws Exception {
    String url = gateway.databaseUrl();
    Path log = followedThenStopped();
    // While no gateway follows: a line more in the file, which is then rotated and compressed, and a line in the new one.
    append(log, line("a@example.net", "2.0.0", "sent"));
    rotateAndCompress(log, "mail.log-20261204.gz");
    append(log, line("b@example.net", "5.1.1", "bounced"));

    try (LogCapture warnings = LogCapture.of(TrackingVerticle.class.getName())) {
      following(log, () -> {
        Poll.until(WAIT, "the new file's position saved", () -> positionAtEndOf(log));
        // The position commits with the facts of the lines before it: at the new file's end, both files are recorded.
        assertThat(facts()).isEqualTo(3);
      });
      assertThat(warnings.warningsContaining("unknown to tracking")).isEmpty();
    }
    assertThat(recorded()).isEqualTo("0:deferred,0:delivered,1:bounced");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'")).isEqualTo(3);
  }

  @Test
  void aFileRotatedAwayBeyondReachIsOneWarningAndTheNewFileIsFollowed() throws Exception {
    Path log = followedThenStopped();
    append(log, line("a@example.net", "2.0.0", "sent"));
    rotateAndCompress(log, "mail.log.1.gz");
    Files.delete(log.resolveSibling("mail.log.1.gz")); // logrotate's rotate count reached, or removed by hand
    append(log, line("b@example.net", "5.1.1", "bounced"));

    try (LogCapture warnings = LogCapture.of(TrackingVerticle.class.getName())) {
      following(log, () -> {
        Poll.until(WAIT, "the new file's fact", () -> facts() == 2);
        Poll.until(WAIT, "the new file's position saved", () -> positionAtEndOf(log));
      });
      List<String> lost = warnings.warningsContaining("unknown to tracking");
      assertThat(lost).hasSize(1);
      assertThat(lost.get(0)).contains(log.toString() + " was read to byte ", "following " + log + " from its start");
    }
    assertThat(recorded()).as("the line in the lost file's end is not a fact").isEqualTo("0:deferred,1:bounced");
  }

  /**
   * Two rotations while down (numbered, {@code compress} with {@code delaycompress}): the file the first gateway was
   * reading is mail.log.2.gz, with a line it did not read; mail.log.1 has a line; the current file has one. The second
   * gateway records all three, each once with one event, and ends at the current file's end.
   */
  @Test
  void aRestartAfterTwoRotationsReadsEveryRotatedFileBetweenOnceThenTheCurrentOne() throws Exception {
    String url = gateway.databaseUrl();
    Path log = followedThenStopped();
    append(log, line("a@example.net", "4.4.1", "deferred"));
    Files.move(log, log.resolveSibling("mail.log.1"));
    append(log, line("a@example.net", "2.0.0", "sent"));
    try (var out = new GZIPOutputStream(Files.newOutputStream(log.resolveSibling("mail.log.2.gz")))) {
      Files.copy(log.resolveSibling("mail.log.1"), out); // the older one renamed and compressed a rotation later
    }
    Files.delete(log.resolveSibling("mail.log.1"));
    Files.move(log, log.resolveSibling("mail.log.1"));
    append(log, line("b@example.net", "5.1.1", "bounced"));

    try (LogCapture warnings = LogCapture.of(TrackingVerticle.class.getName())) {
      following(log, () -> {
        Poll.until(WAIT, "the current file's position saved", () -> positionAtEndOf(log)
            && LedgerRows.string(url, "SELECT file_key FROM tracking_log_positions WHERE node_id = 'tracker'")
                .equals(Files.readAttributes(log, java.nio.file.attribute.BasicFileAttributes.class).fileKey().toString()));
        // The position commits with the facts of the lines before it: at the current file's end, all three files are recorded.
        assertThat(facts()).isEqualTo(4);
      });
      assertThat(warnings.warningsContaining("unknown to tracking")).isEmpty();
    }
    assertThat(LedgerRows.string(url, "SELECT string_agg(idx || ':' || state || ':' || coalesce(dsn, ''), ',' ORDER BY id) FROM delivery_facts"))
        .isEqualTo("0:deferred:4.2.2,0:deferred:4.4.1,0:delivered:2.0.0,1:bounced:5.1.1");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'")).isEqualTo(4);
  }
}
