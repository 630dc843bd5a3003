package dev.ledgerpost.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.lockfile.DirectoryInUse;
import dev.ledgerpost.platform.lockfile.LockFile;
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
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An outcome journal belongs to one process (docs/contract.md §1.5). Real gateway processes: a second one on the
 * journal directory of a live one, with its own database and ports, is refused in one line naming the first's
 * PID and touches nothing; once the first is SIGKILLed, a gateway started on the directory takes the lock and
 * replays what the dead one left. In one JVM, a second gateway on the directory is refused too, and the first
 * keeps its lock.
 */
class SharedJournalTest {
  final String url = TestDatabase.newDatabase();
  /** A Vert.x and a smarthost for the gateways; each test starts its own. */
  @RegisterExtension
  final GatewayHarness harness = GatewayHarness.extension().manual();
  /** Locks every ledger table once it has a body, when told to. */
  final LockingSmarthost smarthost = harness.locking(() -> url);

  /** A child gateway in {@code dir} on the database {@code ledgerUrl}, its outcome journal in {@code journalDir}. */
  private String yaml(Path dir, String ledgerUrl, Path journalDir) {
    return ChildGateway.config(dir, harness.downstream().port(), ledgerUrl) + "retry:\n  journalDir: \"" + journalDir + "\"\n";
  }

  @Test
  void aSecondProcessOnTheJournalIsRefusedAndAfterSigkillTheNextOneTakesItAndReplays() throws Exception {
    Path journalDir = GatewayHarness.tempDir("shared-journal-");
    Path journal = journalDir.resolve("outcomes.log");
    Path lockFile = journalDir.resolve(LockFile.NAME);
    Path home = GatewayHarness.tempDir("journal-owner-");
    String yaml = yaml(home, url, journalDir);
    UUID id;
    smarthost.lockWith(u -> TableLock.acquire(u, LockContentionTest.ALL_TABLES.split(", ")));
    try (ChildGateway first = ChildGateway.start(home, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      assertThat(LockFile.holder(lockFile)).isEqualTo(OptionalLong.of(first.pid()));
      assertThat(Files.readString(lockFile)).isEqualTo(first.pid() + "\n");
      // An outcome left open in the journal: the smarthost accepted, the ledger's tables are locked.
      String reply;
      try (SmtpTestClient c = new SmtpTestClient(first.smtpPort())) {
        c.reply();
        reply = c.sendMail("a@example.com", List.of("b@example.net"), "Message-ID: <owned@example.com>\r\nSubject: x\r\n\r\nbody");
      }
      assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
      id = UUID.fromString(LockContentionTest.ledgerId(reply));
      Poll.until(Duration.ofSeconds(20), "the retry part is retrying under the lock", () ->
          !first.log("settle retry of " + id + " failed").isEmpty());
      byte[] journaled = Files.readAllBytes(journal);
      assertThat(journaled).as("the outcome is in the journal").isNotEmpty();

      Path intruderHome = GatewayHarness.tempDir("journal-intruder-");
      ChildGateway second = ChildGateway.start(intruderHome, yaml(intruderHome, TestDatabase.newDatabase(), journalDir), null);
      assertThat(second.awaitExit(Duration.ofSeconds(120))).as("exit status of the refused start").isEqualTo(1);
      assertThat(second.log("is in use by")).containsExactly("retry.journalDir " + journalDir
          + " is in use by another running gateway (process " + first.pid() + " holds its lock " + lockFile
          + "); stop that gateway first, or give this one its own retry.journalDir");
      assertThat(second.lines()).noneMatch(l -> l.startsWith("\tat ") || l.contains("Exception"));
      assertThat(second.log("replaying")).as("the refused process replayed nothing").isEmpty();
      assertThat(Files.readAllBytes(journal)).as("nor compacted the journal").isEqualTo(journaled);
      assertThat(LockFile.holder(lockFile)).as("the first still holds it").isEqualTo(OptionalLong.of(first.pid()));

      assertThat(first.kill()).as("exit status of SIGKILL").isEqualTo(137);
    }
    smarthost.lock().release();
    assertThat(LedgerRows.status(url, id)).as("nobody settled it before the restart").isEqualTo("PENDING");

    smarthost.lockWith(null);
    try (ChildGateway next = ChildGateway.start(home, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      assertThat(LockFile.holder(lockFile)).as("the OS dropped the killed one's lock").isEqualTo(OptionalLong.of(next.pid()));
      assertThat(Files.readString(lockFile)).isEqualTo(next.pid() + "\n");
      Poll.until(Duration.ofSeconds(20), "replayed outcome settled", () -> "SENT".equals(LedgerRows.status(url, id)));
      assertThat(next.log("replaying 1 known outcomes")).hasSize(1);
      Poll.until(Duration.ofSeconds(10), "journal emptied", () -> Files.size(journal) == 0);
    }
    assertThat(harness.downstream().messages()).hasSize(1);
    assertThat(LockFile.holder(lockFile)).as("released at a clean stop").isEmpty();
  }

  @Test
  void aSecondGatewayInThisJvmOnTheJournalIsRefusedAndTheFirstKeepsItsLock() throws Exception {
    Map<String, Object> first = GatewayHarness.defaults(harness.downstream().port());
    Map<String, Object> second = GatewayHarness.defaults(harness.downstream().port());
    Path journalDir = Path.of((String) first.get("retry.journalDir"));
    second.put("retry.journalDir", journalDir.toString());
    Path lockFile = journalDir.resolve(LockFile.NAME);
    long self = ProcessHandle.current().pid();
    try (GatewayHarness running = GatewayHarness.start(harness.vertx(), first)) {
      assertThatThrownBy(() -> GatewayHarness.start(harness.vertx(), second))
          .isInstanceOf(DirectoryInUse.class)
          .hasMessage("retry.journalDir " + journalDir + " is in use by another gateway in this process (PID " + self
              + " holds its lock " + lockFile + "); give each gateway its own retry.journalDir");
      assertThat(LockFile.holder(lockFile)).as("the refusal left the first's OS lock alone").isEqualTo(OptionalLong.of(self));
      try (SmtpTestClient c = new SmtpTestClient(running.smtpPort())) {
        c.reply();
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: still here\r\n\r\nbody"))
            .as("the first gateway is unharmed").startsWith("250 2.0.0");
      }
    }
    assertThat(LockFile.holder(lockFile)).as("released when the gateway stopped").isEmpty();
    try (GatewayHarness after = GatewayHarness.start(harness.vertx(), second)) {
      assertThat(LockFile.holder(lockFile)).isEqualTo(OptionalLong.of(self));
    }
  }
}
