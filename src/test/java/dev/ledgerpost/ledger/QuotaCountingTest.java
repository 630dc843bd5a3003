package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.tenants.Tenants;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The quota's share of the open's statement (docs/design.md §8.9 "Quotas"), below the doors: opens of one user in ONE
 * batch are granted in batch order up to the limit and the rest refused (the strangers of the batch untouched);
 * statements racing on separate connections (as nodes do) accept exactly the limit; an attempt that repeats a
 * committed one does not count its opens twice; a new window starts from zero.
 */
class QuotaCountingTest {
  static final Duration DEAD_AFTER = Duration.ofMinutes(10);
  static final int RACERS = 8;
  static final MutableClock CLOCK = new MutableClock(Instant.now().truncatedTo(ChronoUnit.HOURS).plusSeconds(60));
  static final QuotaCounting QUOTA = new QuotaCounting(Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of(
      "five", new TenantPolicy(5, 0, 0, 0, false),
      "racer", new TenantPolicy(0, 20, 0, 0, false),
      "again", new TenantPolicy(2, 0, 0, 0, false)))), CLOCK, 0.8);

  static Vertx vertx;
  static Pool pool;
  static String url;

  @BeforeAll
  static void start() throws Exception {
    vertx = Vertx.vertx();
    url = TestDatabase.newDatabase();
    pool = TestDatabase.pool(vertx, url, RACERS + 2);
  }

  @AfterAll
  static void stop() throws Exception {
    GatewayHarness.await(pool.close());
    GatewayHarness.await(vertx.close());
  }

  /**
   * The windows the statement takes, kept for their hour since issue 33, are the hour's and the UTC day's starts of
   * the clock's instant, at every step across hours and a day's end, before and after the epoch.
   */
  @Test
  void theWindowsAreTheClocksHourAndDayAcrossTheirEnds() {
    for (Instant start : List.of(Instant.parse("2026-12-04T22:59:58.5Z"), Instant.parse("1969-12-31T22:59:30Z"))) {
      MutableClock clock = new MutableClock(start);
      QuotaCounting quota = new QuotaCounting(Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of())), clock, 0.8);
      for (int step = 0; step < 200; step++) {
        Instant now = clock.instant();
        List<Object> params = quota.params(List.of());
        assertThat(params.get(2)).as(now.toString())
            .isEqualTo(java.time.OffsetDateTime.ofInstant(now.truncatedTo(ChronoUnit.HOURS), java.time.ZoneOffset.UTC));
        assertThat(params.get(3)).as(now.toString())
            .isEqualTo(java.time.OffsetDateTime.ofInstant(now.truncatedTo(ChronoUnit.DAYS), java.time.ZoneOffset.UTC));
        assertThat(params.get(4)).isEqualTo(0.8);
        clock.advance(Duration.ofSeconds(37));
      }
    }
  }

  @Test
  void opensOfOneUserInOneBatchAreGrantedInOrderUpToTheLimitAndTheRestRefused() throws Exception {
    List<Open> batch = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      batch.add(open("five"));
    }
    batch.add(3, open(null)); // mail without a user: counted for nobody
    List<GroupCommit.Outcome<Opened>> out = GatewayHarness.await(new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA).run(batch, 1));
    List<String> answers = out.stream().map(o -> o.value().overQuota() == null ? "opened" : o.value().overQuota().quota()).toList();
    assertThat(answers).containsExactly("opened", "opened", "opened", "opened", "opened", "opened",
        "messagesPerHour", "messagesPerHour");
    Opened refused = out.get(7).value();
    assertThat(refused.version()).isZero();
    assertThat(refused.overQuota().limit()).isEqualTo(5);
    assertThat(refused.overQuota().resetsAt()).isEqualTo(CLOCK.instant().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofHours(1)));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE auth_user = 'five'")).isEqualTo(5);
    assertThat(LedgerRows.string(url, "SELECT hour_used || '/' || hour_refused FROM quota_usage WHERE user_name = 'five'"))
        .isEqualTo("5/2");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'quota.approaching' AND payload->>'user' = 'five'"))
        .isEqualTo(1); // 4 of 5 reached in this batch
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'quota.exceeded' AND payload->>'user' = 'five'"))
        .isEqualTo(1);

    // The next hour starts from zero; the events may come again, once.
    CLOCK.advance(Duration.ofHours(1));
    List<GroupCommit.Outcome<Opened>> next = GatewayHarness.await(new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA)
        .run(List.of(open("five")), 1));
    assertThat(next.get(0).value().overQuota()).isNull();
    assertThat(LedgerRows.string(url, "SELECT hour_used || '/' || hour_refused FROM quota_usage WHERE user_name = 'five'"))
        .isEqualTo("1/0");
  }

  @Test
  void statementsRacingOnSeparateConnectionsAcceptExactlyTheLimit() throws Exception {
    List<Future<List<GroupCommit.Outcome<Opened>>>> running = new ArrayList<>();
    for (int i = 0; i < RACERS; i++) {
      running.add(new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA).run(List.of(open("racer"), open("racer"),
          open("racer"), open("racer")), 1));
    }
    int opened = 0;
    int refused = 0;
    for (Future<List<GroupCommit.Outcome<Opened>>> f : running) {
      for (GroupCommit.Outcome<Opened> o : GatewayHarness.await(f)) {
        if (o.value().overQuota() == null) {
          opened++;
        } else {
          refused++;
          assertThat(o.value().overQuota().quota()).isEqualTo("messagesPerDay");
        }
      }
    }
    assertThat(opened).isEqualTo(20);
    assertThat(refused).isEqualTo(RACERS * 4 - 20);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE auth_user = 'racer'")).isEqualTo(20);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'quota.exceeded' AND payload->>'user' = 'racer'"))
        .isEqualTo(1);
  }

  @Test
  void anAttemptThatRepeatsACommittedOneDoesNotCountItsOpensTwice() throws Exception {
    List<Open> batch = List.of(open("again"), open("again"));
    OpenBatch statement = new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA);
    GatewayHarness.await(statement.run(batch, 1));
    // As after an ambiguous commit: the same opens again, with ON CONFLICT DO NOTHING.
    List<GroupCommit.Outcome<Opened>> again = GatewayHarness.await(statement.run(batch, 2));
    assertThat(again).allMatch(o -> o.value().overQuota() == null && o.value().version() == 1);
    assertThat(LedgerRows.string(url, "SELECT hour_used || '/' || hour_refused FROM quota_usage WHERE user_name = 'again'"))
        .isEqualTo("2/0");
  }

  static Open open(String user) {
    return new Open(LedgerIds.next(), Intake.SMTP, user, "127.0.0.1", "client.test", "a@example.com", "<q@example.com>", 10,
        "00", "smarthost:test", OffsetDateTime.now(ZoneOffset.UTC),
        List.of(new RecipientEntry("b@example.net", RecipientStatus.PENDING, "250 2.1.5 Ok")));
  }
}
