package dev.ledgerpost.relay.retry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.TableLock;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * 500 known outcomes journaled at once and handed over twice each while the ledger's tables are
 * locked; then the lock goes: every one settles, none twice, and the journal ends compacted to empty.
 * The retry part and a real ledger, driven through the retry part's face to the relay contract ({@link OutcomeKeeper};
 * no SMTP, to stay fast).
 */
class ManyOutcomesTest {
  static final int N = 500;

  @Test
  void fiveHundredBlockedOutcomesAllSettleOnceAfterTheLockIsReleased() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      Map<String, Object> o = GatewayHarness.defaults(downstream.port());
      o.put("ledger.lockTimeout", "250ms");
      o.put("retry.journalCompactSize", "16KB");
      try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
        String url = gateway.databaseUrl();
        Path journal = Path.of((String) o.get("retry.journalDir")).resolve(OutcomeJournal.FILE);
        List<UUID> ids = new ArrayList<>();
        List<KnownOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < N; i++) {
          UUID id = UUID.randomUUID();
          ids.add(id);
          outcomes.add(new KnownOutcome(new Settle(id, 1, MessageStatus.SENT, 1, 250, "2.0.0", "Ok: queued as M" + i, null),
              "<many-" + i + "@example.com>", true));
        }
        LedgerRows.insertPending(url, ids, Instant.now());
        OutcomeKeeper keeper = gateway.gateway().part(RetryPart.class).keeper();

        long released;
        try (TableLock lock = TableLock.acquire(url, "messages", "recipients", "outbox")) {
          // What the delivery part does first: journal, all at once (the future completes only after the fsync).
          GatewayHarness.await(Future.all(outcomes.stream().map(keeper::journal).toList()));
          RetryVerticle.Stats journaled = gateway.gateway().part(RetryPart.class).stats();
          System.out.printf("%d outcomes journaled with %d fsyncs%n", journaled.journalAppends(), journaled.journalSyncs());
          assertThat(journaled.journalOpen()).isEqualTo(N);
          assertThat(journaled.journalSyncs()).as("group commit").isLessThan(N / 5);

          // Then every settle fails under the lock and each outcome is handed over, twice.
          for (int round = 0; round < 2; round++) {
            outcomes.forEach(k -> keeper.handOver(k, true));
          }
          Poll.until(Duration.ofSeconds(10), "duplicates seen", () -> gateway.gateway().part(RetryPart.class).stats().duplicates() == N);
          // The first wave fails after its whole-transaction retries, then one outcome at a time probes.
          Poll.until(Duration.ofSeconds(20), "the retry part is probing the locked ledger", () ->
              gateway.gateway().part(RetryPart.class).stats().failedAttempts() >= 6);
          assertThat(gateway.gateway().part(RetryPart.class).stats().held()).isEqualTo(N);
          assertThat(lock.queryLong("SELECT count(*) FROM messages WHERE status = 'PENDING'")).isEqualTo(N);
          released = System.nanoTime();
        }

        Poll.until(Duration.ofSeconds(60), "all settled", () ->
            LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'SENT'") == N);
        long drainMillis = (System.nanoTime() - released) / 1_000_000;
        assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE version <> 2")).isZero();
        assertThat(LedgerRows.count(url, "SELECT count(*) FROM recipients WHERE status <> 'ACCEPTED'")).isZero();
        assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type = 'message.settled'")).isEqualTo(N);
        assertThat(LedgerRows.count(url, "SELECT count(DISTINCT message_id) FROM outbox_events WHERE type = 'message.settled'"))
            .isEqualTo(N);

        Poll.until(Duration.ofSeconds(10), "journal compacted to nothing", () -> Files.size(journal) == 0);
        RetryVerticle.Stats s = gateway.gateway().part(RetryPart.class).stats();
        assertThat(s.held()).isZero();
        assertThat(s.settled()).isEqualTo(N);
        assertThat(s.dropped()).isZero();
        assertThat(s.journalOpen()).isZero();
        assertThat(s.journalCompactions()).as("rewritten while outcomes were still open, then emptied")
            .isGreaterThanOrEqualTo(2);
        assertThat(s.attempts()).isEqualTo(N + s.failedAttempts());
        System.out.printf("%d outcomes settled %d ms after the lock was released; %d settle attempts (%d failed under the "
            + "lock), %d compactions%n", N, drainMillis, s.attempts(), s.failedAttempts(), s.journalCompactions());
      }
    } finally {
      GatewayHarness.await(vertx.close());
    }
  }
}
