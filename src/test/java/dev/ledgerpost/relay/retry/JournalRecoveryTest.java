package dev.ledgerpost.relay.retry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Start-up with a damaged journal, against a real ledger: every intact outcome is settled, the damage
 * is reported (a torn tail as a warning, a bad record in the middle as CRITICAL), start-up never fails.
 */
class JournalRecoveryTest {
  Vertx vertx;
  Map<String, Object> config;
  String url;
  Path journal;
  final List<UUID> ids = new ArrayList<>();
  final List<byte[]> records = new ArrayList<>();

  @BeforeEach
  void prepare() throws Exception {
    vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    config = GatewayHarness.defaults(downstream.port());
    url = (String) config.get("ledger.url");
    journal = Path.of((String) config.get("retry.journalDir")).resolve(OutcomeJournal.FILE);
    GatewayHarness.start(vertx, config).close(); // migrates the fresh database
    for (int i = 0; i < 5; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id);
      records.add(JournalFormat.outcome(new KnownOutcome(new Settle(id, 1, MessageStatus.SENT, 1, 250, "2.0.0",
          "Ok: queued as R" + i, null), "<r" + i + "@example.com>", true), System.currentTimeMillis()));
    }
    LedgerRows.insertPending(url, ids, Instant.now());
  }

  @AfterEach
  void stop() throws Exception {
    GatewayHarness.await(vertx.close());
  }

  @Test
  void aTornLastRecordIsSkippedWithAWarningAndEveryIntactOutcomeIsSettled() throws Exception {
    byte[] last = records.get(4);
    Files.write(journal, JournalFormatTest.concat(records.get(0), records.get(1), records.get(2), records.get(3),
        Arrays.copyOf(last, last.length / 2)));

    try (LogCapture warnings = LogCapture.of(OutcomeJournal.class.getName());
        LogCapture audit = LogCapture.of("dev.ledgerpost.audit");
        GatewayHarness gateway = GatewayHarness.start(vertx, config)) {
      Poll.until(Duration.ofSeconds(20), "four replayed outcomes settled", () ->
          LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'SENT'") == 4);
      assertThat(warnings.warningsContaining("torn last record")).hasSize(1);
      assertThat(audit.errorsContaining("outcome_journal_corrupt")).isEmpty();
      for (int i = 0; i < 4; i++) {
        assertThat(LedgerRows.status(url, ids.get(i))).isEqualTo("SENT");
      }
      // The torn outcome was never acknowledged, so its settle never started: an operator's case now.
      assertThat(LedgerRows.status(url, ids.get(4))).isEqualTo("PENDING");
      assertThat(gateway.gateway().part(RetryPart.class).stats().settled()).isEqualTo(4);
      Poll.until(Duration.ofSeconds(10), "journal emptied once everything is done", () -> Files.size(journal) == 0);
    }
  }

  @Test
  void aCorruptedChecksumInTheMiddleIsReportedAndTheRecordsAfterItAreStillRecovered() throws Exception {
    byte[] damaged = records.get(1).clone();
    damaged[JournalFormat.HEADER + 30] ^= 0x40;
    Files.write(journal, JournalFormatTest.concat(records.get(0), damaged, records.get(2), records.get(3),
        JournalFormat.done(ids.get(3)), records.get(4)));

    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit");
        GatewayHarness gateway = GatewayHarness.start(vertx, config)) {
      List<String> critical = audit.errorsContaining("CRITICAL audit_event=outcome_journal_corrupt",
          "offset=" + records.get(0).length, "bytes=" + damaged.length);
      assertThat(critical).hasSize(1);
      Poll.until(Duration.ofSeconds(20), "intact open outcomes settled", () ->
          LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'SENT'") == 3);
      assertThat(LedgerRows.status(url, ids.get(0))).isEqualTo("SENT");
      assertThat(LedgerRows.status(url, ids.get(1))).isEqualTo("PENDING"); // its record is lost: the stale watch's case
      assertThat(LedgerRows.status(url, ids.get(2))).isEqualTo("SENT");
      assertThat(LedgerRows.status(url, ids.get(3))).as("done-marked: not replayed").isEqualTo("PENDING");
      assertThat(LedgerRows.status(url, ids.get(4))).isEqualTo("SENT");
      try (Stream<Path> files = Files.list(journal.getParent())) {
        assertThat(files.map(p -> p.getFileName().toString())).anyMatch(n -> n.startsWith(OutcomeJournal.FILE + ".corrupt-"));
      }
      Poll.until(Duration.ofSeconds(10), "journal emptied once everything is done", () -> Files.size(journal) == 0);
      assertThat(gateway.gateway().part(RetryPart.class).stats().journalOpen()).isZero();
    }
  }
}
