package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Claim;
import dev.ledgerpost.ledger.LedgerMessages.Earlier;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerPool;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claims' window across V117's buckets (docs/data-model.md §5.32, docs/contract.md §1.13): a claim is found
 * wherever in the window its hour lies (this hour, the previous one, a day that is over and whose fingerprint index is
 * built, or one whose index is not built yet), an expired claim is replaced, a failed row's claim is taken over and
 * its old row goes, an open that waits for another's advisory lock sees the claim that one committed, and retention
 * drops a day past the window.
 */
class ResubmissionClaimWindowTest {
  static final Duration DEAD_AFTER = Duration.ofMinutes(10);
  static final Duration WINDOW = Duration.ofDays(5);
  static final SecureRandom RANDOM = new SecureRandom();

  @RegisterExtension
  static final LedgerPool ledger = new LedgerPool(4);
  static Pool pool;
  static String url;

  @BeforeAll
  static void start() throws Exception {
    pool = ledger.pool();
    url = ledger.url();
    // The partitions of the window's past days, as a gateway running for a week has them.
    sql("SELECT resubmission_claims_make(now() - interval '6 days', 7)");
  }

  @Test
  void aClaimOfThePreviousHourIsFound() throws Exception {
    assertFoundAfterMoving("interval '1 hour'", false);
  }

  @Test
  void aClaimOfAnEarlierDayWhoseFingerprintIndexIsBuiltIsFound() throws Exception {
    assertFoundAfterMoving("interval '1 day'", true);
    assertFoundAfterMoving("interval '4 days 23 hours'", true);
  }

  @Test
  void aClaimOfAnEarlierDayWhoseIndexIsNotBuiltYetIsFoundHourByHour() throws Exception {
    sql("UPDATE resubmission_claims_indexed SET through = 0");
    assertFoundAfterMoving("interval '1 day 3 hours'", false);
  }

  /**
   * Takes a claim, moves it (and its hour) {@code ago} into the past, still inside the window, and checks a second open
   * of the fingerprint is answered with it. With {@code indexed}, the retention job's pass first builds the closed days'
   * fingerprint indexes and moves {@code through} past them, so the probe finds the claim by that index.
   */
  private static void assertFoundAfterMoving(String ago, boolean indexed) throws Exception {
    UUID fp = fingerprint();
    Open first = open(fp, null);
    assertThat(openOne(first)).isEqualTo(new Opened(first.id(), 1));
    String at = "now() - " + ago;
    sql("UPDATE resubmission_claims SET claimed_at = " + at + ", bucket = resubmission_claim_hour(" + at + "),"
        + " expires_at = " + at + " + interval '5 days' WHERE message_id = '" + first.id() + "'");
    if (indexed) {
      sql("SELECT resubmission_claims_index(true)");
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims_indexed"
          + " WHERE through = resubmission_claim_hour(now()) / 24 * 24")).isEqualTo(1);
    }
    Open retry = open(fp, null);
    Opened answer = openOne(retry);
    assertThat(answer.version()).as("the retry opened nothing").isZero();
    assertThat(answer.earlier().id()).isEqualTo(first.id());
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id = '" + retry.id() + "'")).isZero();
  }

  /** A claim taken under a longer window, older than the current one and still live, holds (its day is kept). */
  @Test
  void aLiveClaimOlderThanTheCurrentWindowIsFound() throws Exception {
    UUID fp = fingerprint();
    Open first = open(fp, null);
    assertThat(openOne(first)).isEqualTo(new Opened(first.id(), 1));
    String at = "now() - interval '5 days 12 hours'";
    sql("UPDATE resubmission_claims SET claimed_at = " + at + ", bucket = resubmission_claim_hour(" + at + "),"
        + " expires_at = now() + interval '1 hour' WHERE message_id = '" + first.id() + "'");
    // The retention job's pass: the closed days' indexes (the probe covers every indexed day) and the drops.
    GatewayHarness.await(new Ledger(pool).pruneClaims(new LedgerMessages.PruneClaims(100, WINDOW)));
    Opened answer = openOne(open(fp, null));
    assertThat(answer.version()).isZero();
    assertThat(answer.earlier().id()).isEqualTo(first.id());
  }

  @Test
  void anExpiredClaimIsReplacedAndTheNewClaimHolds() throws Exception {
    UUID fp = fingerprint();
    Open first = open(fp, null);
    assertThat(openOne(first)).isEqualTo(new Opened(first.id(), 1));
    sql("UPDATE resubmission_claims SET expires_at = now() - interval '1 second' WHERE message_id = '" + first.id() + "'");

    Open second = open(fp, null);
    assertThat(openOne(second)).as("the expired claim is no one's").isEqualTo(new Opened(second.id(), 1));
    Open third = open(fp, null);
    Opened answer = openOne(third);
    assertThat(answer.version()).isZero();
    assertThat(answer.earlier()).isEqualTo(new Earlier(second.id(), MessageStatus.PENDING, true));
  }

  @Test
  void aFailedRowsClaimIsTakenOverByItsReplacementAndNotByAFreshOpen() throws Exception {
    UUID fp = fingerprint();
    Open first = open(fp, null);
    assertThat(openOne(first)).isEqualTo(new Opened(first.id(), 1));
    // A claim of an earlier hour: the takeover deletes it in its own partition.
    String at = "now() - interval '2 hours'";
    sql("UPDATE resubmission_claims SET claimed_at = " + at + ", bucket = resubmission_claim_hour(" + at + ")"
        + " WHERE message_id = '" + first.id() + "'");
    assertThat(GatewayHarness.await(new SettleBatch(pool).run(List.of(new Settle(first.id(), 1, MessageStatus.FAILED_TEMP, 1,
        451, "4.3.0", "try again later", null)), 1)).get(0).failure()).isNull();

    Open fresh = open(fp, null);
    Opened lost = openOne(fresh);
    assertThat(lost.earlier()).as("a fresh open loses to the failed row's claim")
        .isEqualTo(new Earlier(first.id(), MessageStatus.FAILED_TEMP, false));

    Open retry = open(fp, null).replacing(first.id());
    assertThat(openOne(retry)).isEqualTo(new Opened(retry.id(), 1));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims WHERE message_id = '" + first.id() + "'"))
        .as("the replaced claim's row is gone").isZero();
    Open again = open(fp, null).replacing(first.id());
    assertThat(openOne(again).earlier()).as("the claim is no longer the failed row's")
        .isEqualTo(new Earlier(retry.id(), MessageStatus.PENDING, true));
  }

  /**
   * Another node's open holds the fingerprint's advisory lock (here: a connection that takes it, then writes a claim
   * as that open would, and commits). This open waits for it, and its statement, whose snapshot is taken after the
   * wait, finds the committed claim: it opens nothing.
   */
  @Test
  void anOpenThatWaitsForAnotherNodesLockFindsTheClaimItCommitted() throws Exception {
    UUID fp = fingerprint();
    UUID other = LedgerIds.next();
    int key = (int) (fp.getMostSignificantBits() >>> 32);
    Open mine = open(fp, null);
    try (Connection c = TestDatabase.connect(url)) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.execute("SELECT pg_advisory_xact_lock(" + 0x4C43 + ", " + key + ")");
        Future<List<GroupCommit.Outcome<Opened>>> running = new OpenBatch(pool, "live", DEAD_AFTER).run(List.of(mine), 1);
        Poll.until(Duration.ofSeconds(30), "the open waits for the advisory lock", () -> LedgerRows.count(url,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = " + 0x4C43
                + " AND objid = " + Integer.toUnsignedLong(key)) == 1);
        assertThat(running.isComplete()).isFalse();
        st.execute("INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at)"
            + " VALUES (resubmission_claim_hour(statement_timestamp()), '" + fp + "', '" + other + "', statement_timestamp(),"
            + " statement_timestamp() + interval '5 days')");
        c.commit();
        GroupCommit.Outcome<Opened> o = GatewayHarness.await(running).get(0);
        assertThat(o.failure()).isNull();
        assertThat(o.value().version()).isZero();
        assertThat(o.value().earlier().id()).isEqualTo(other);
      }
    }
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id = '" + mine.id() + "'")).isZero();
  }

  /** Retention's pass keeps a day past the window while one of its claims lives, and drops it once none does. */
  @Test
  void retentionDropsADayPastTheWindowOnceNoneOfItsClaimsLives() throws Exception {
    // A day of its own, apart from the days the other tests' claims are moved to.
    String sixDays = "now() - interval '7 days'";
    sql("SELECT resubmission_claims_make(" + sixDays + ", 0)");
    String part = string("SELECT 'resubmission_claims_p' || to_char((" + sixDays + ") AT TIME ZONE 'UTC', 'YYYYMMDD')");
    UUID expired = UUID.randomUUID();
    UUID live = UUID.randomUUID();
    for (UUID id : List.of(expired, live)) {
      sql("INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at) VALUES"
          + " (resubmission_claim_hour(" + sixDays + "), gen_random_uuid(), '" + id + "', " + sixDays + ", " + sixDays
          + " + interval '5 days')");
    }
    // Taken under a longer window: still live, so its day stays.
    sql("UPDATE resubmission_claims SET expires_at = now() + interval '1 hour' WHERE message_id = '" + live + "'");
    assertThat(LedgerRows.count(url, "SELECT dropped FROM resubmission_claims_keep(" + WINDOW.toSeconds() + ", 100)")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM " + part)).isEqualTo(2);

    sql("UPDATE resubmission_claims SET expires_at = now() - interval '1 second' WHERE message_id = '" + live + "'");
    assertThat(LedgerRows.count(url, "SELECT dropped FROM resubmission_claims_keep(" + WINDOW.toSeconds() + ", 100)"))
        .as("the day's two claims went with it").isGreaterThanOrEqualTo(2);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM pg_class WHERE relname = '" + part + "'")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims WHERE message_id IN ('" + expired + "', '"
        + live + "')")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM pg_class WHERE relname = '" + string(
        "SELECT 'resubmission_claims_p' || to_char((now() + interval '7 days') AT TIME ZONE 'UTC', 'YYYYMMDD')") + "'"))
        .as("the next week's days are made").isEqualTo(1);
  }

  /**
   * The job's pass (Ledger.pruneClaims) builds a closed day's missing fingerprint index CONCURRENTLY (a plain build
   * would hold up the opens) and only then moves {@code through} past it; the SQL pass alone never builds, so
   * {@code through} stays below a day without its index.
   */
  @Test
  void theJobsPassBuildsAClosedDaysIndexConcurrentlyAndOnlyThenMovesThrough() throws Exception {
    sql("SELECT resubmission_claims_make(now() - interval '2 days', 7)");
    String lo = string("SELECT (((now() - interval '2 days') AT TIME ZONE 'UTC')::date - date '1970-01-01') * 24");
    String part = string("SELECT 'resubmission_claims_p' || to_char((now() - interval '2 days') AT TIME ZONE 'UTC', 'YYYYMMDD')");
    sql("DROP INDEX IF EXISTS " + part + "_fingerprint");
    sql("SELECT resubmission_claims_keep(" + WINDOW.toSeconds() + ", 100)");
    assertThat(string("SELECT through::text FROM resubmission_claims_indexed")).as("not past the unindexed day").isEqualTo(lo);

    GatewayHarness.await(new Ledger(pool).pruneClaims(new LedgerMessages.PruneClaims(100, WINDOW)));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid = to_regclass('"
        + part + "_fingerprint')")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims_indexed"
        + " WHERE through = resubmission_claim_hour(now()) / 24 * 24")).isEqualTo(1);
  }

  private static Opened openOne(Open o) throws Exception {
    GroupCommit.Outcome<Opened> outcome = GatewayHarness.await(new OpenBatch(pool, "live", DEAD_AFTER).run(List.of(o), 1)).get(0);
    assertThat(outcome.failure()).isNull();
    return outcome.value();
  }

  static Open open(UUID fingerprint, UUID replaces) {
    return new Open(LedgerIds.next(), Intake.SMTP, null, "127.0.0.1", "client.test", "a@example.com", "<window@example.com>",
        10, "00", "smarthost:test", OffsetDateTime.now(ZoneOffset.UTC),
        List.of(new RecipientEntry("b@example.net", RecipientStatus.PENDING, "250 2.1.5 Ok")), null, null,
        new Claim(fingerprint, WINDOW, replaces));
  }

  static UUID fingerprint() {
    return new UUID(RANDOM.nextLong(), RANDOM.nextLong());
  }

  static String string(String sql) throws Exception {
    return LedgerRows.string(url, sql);
  }

  static void sql(String statement) throws Exception {
    ledger.sql(statement);
  }
}
