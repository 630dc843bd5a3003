package dev.ledgerpost.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LockingSmarthost;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import dev.ledgerpost.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The gateway is a real process. The downstream accepts a message, the ledger's tables are locked so
 * the settle cannot commit, the client hears 250, and the process is killed with SIGKILL while the
 * lock is held. Restarted on the same data directory after the lock is gone, it replays its outcome
 * journal: the row becomes SENT, and the downstream still has exactly one copy.
 */
class ProcessKillTest {
  final String url = TestDatabase.newDatabase();
  @RegisterExtension
  final GatewayHarness harness = GatewayHarness.extension().manual();
  /** Locks every ledger table of the child's database once it has a body, when told to. */
  final LockingSmarthost smarthost = harness.locking(() -> url);

  @Test
  void aGatewayKilledWhileItsSettleIsBlockedSettlesFromItsJournalAfterRestartAndSendsNothingAgain() throws Exception {
    Path dir = GatewayHarness.tempDir("child-");
    String yaml = ChildGateway.config(dir, harness.downstream().port(), url);
    Path journal = dir.resolve("journal").resolve("outcomes.log");
    UUID id;
    smarthost.lockWith(u -> TableLock.acquire(u, LockContentionTest.ALL_TABLES.split(", ")));
    try (ChildGateway first = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      String reply;
      try (SmtpTestClient c = new SmtpTestClient(first.smtpPort())) {
        c.reply();
        reply = c.sendMail("a@example.com", List.of("b@example.net"),
            "Message-ID: <killed@example.com>\r\nSubject: killed\r\n\r\nbody");
      }
      assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
      id = UUID.fromString(LockContentionTest.ledgerId(reply));
      assertThat(first.log("CRITICAL audit_event=delivery_result_persist_failed", id.toString())).hasSize(1);
      Poll.until(Duration.ofSeconds(20), "the retry part is retrying under the lock", () ->
          !first.log("settle retry of " + id + " failed").isEmpty());
      assertThat(smarthost.lock().queryString("SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("PENDING");
      assertThat(Files.size(journal)).as("the outcome is in the journal").isPositive();

      assertThat(first.kill()).as("exit status of SIGKILL").isEqualTo(137);
    }
    smarthost.lock().release();
    assertThat(LedgerRows.status(url, id)).as("nobody settled it before the restart").isEqualTo("PENDING");
    assertThat(Files.size(journal)).isPositive();

    smarthost.lockWith(null);
    try (ChildGateway second = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      Poll.until(Duration.ofSeconds(20), "replayed outcome settled", () -> "SENT".equals(LedgerRows.status(url, id)));
      assertThat(second.log("replaying 1 known outcomes")).hasSize(1);
      assertThat(second.log("audit_event=delivery_result_persisted", id.toString(), "via=retry")).hasSize(1);
      Poll.until(Duration.ofSeconds(10), "journal emptied", () -> Files.size(journal) == 0);
    }
    assertThat(harness.downstream().messages()).hasSize(1);
    assertThat(harness.downstream().dataCommands()).isEqualTo(1);
    assertThat(LedgerRows.string(url, "SELECT version || ':' || downstream_reply FROM messages WHERE id = '" + id + "'"))
        .isEqualTo("2:250 2.0.0 Ok: queued as DS1");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.settled'")).isEqualTo(1);
  }

  @Test
  void whenTheJournalCannotBeWrittenTheOutcomeIsStillSettledAndTheClientHearsTheSame() throws Exception {
    Path dir = GatewayHarness.tempDir("child-nospace-");
    String yaml = ChildGateway.config(dir, harness.downstream().port(), url, io.vertx.core.net.SelfSignedCertificate.create("child.test"));
    // RLIMIT_FSIZE 0: every write that would grow a file fails with EFBIG, as on a full disk (SIGXFSZ ignored,
    // as a daemon would). The log goes to a pipe, which the limit does not touch.
    try (ChildGateway g = ChildGateway.start(dir, yaml, "trap '' XFSZ; ulimit -f 0").awaitReady(Duration.ofSeconds(120))) {
      String first = send(g, "<nospace-1@example.com>");
      assertThat(first).startsWith("250 2.0.0 Ok: queued as ");
      UUID a = UUID.fromString(LockContentionTest.ledgerId(first));
      assertThat(g.log("CRITICAL audit_event=outcome_journal_failed", a.toString(), "File too large")).hasSize(1);
      Poll.until(Duration.ofSeconds(10), "settled directly", () -> "SENT".equals(LedgerRows.status(url, a)));

      // Both the journal and the settle fail: the retry part holds the outcome in memory and settles it later.
      smarthost.lockWith(u -> TableLock.acquire(u, LockContentionTest.ALL_TABLES.split(", ")));
      String second = send(g, "<nospace-2@example.com>");
      assertThat(second).startsWith("250 2.0.0 Ok: queued as ");
      UUID b = UUID.fromString(LockContentionTest.ledgerId(second));
      assertThat(smarthost.lock().queryString("SELECT status FROM messages WHERE id = '" + b + "'")).isEqualTo("PENDING");
      Poll.until(Duration.ofSeconds(10), "CRITICAL about the unjournaled outcome", () ->
          !g.log("CRITICAL audit_event=known_outcome_not_journaled", b.toString()).isEmpty());
      smarthost.lock().release();
      Poll.until(Duration.ofSeconds(20), "settled by the retry part", () -> "SENT".equals(LedgerRows.status(url, b)));
    }
    assertThat(harness.downstream().messages()).hasSize(2);
  }

  private static String send(ChildGateway g, String messageId) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(g.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Message-ID: " + messageId + "\r\nSubject: x\r\n\r\nbody");
    }
  }
}
