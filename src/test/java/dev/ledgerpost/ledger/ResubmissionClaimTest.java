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
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The resubmission claim in the open's statement (docs/contract.md §1.13), below the SMTP sessions: the cases the
 * gateway reaches only by chance of timing, made on purpose. Several opens of one fingerprint in ONE statement (the
 * group commit put them in one batch); several statements on separate connections claiming one fingerprint, or taking
 * one failed row's claim over, at the same moment (as nodes do); and which claimant counts as held, by its node's
 * heartbeat.
 */
class ResubmissionClaimTest {
  /** node.deadAfter, long: the node 'live' registered at the start stays alive for the whole class, however slow. */
  static final Duration DEAD_AFTER = Duration.ofMinutes(10);
  static final Duration WINDOW = Duration.ofDays(5);
  static final int RACERS = 8;
  static final SecureRandom RANDOM = new SecureRandom();

  @RegisterExtension
  static final LedgerPool ledger = new LedgerPool(RACERS + 2);
  static Pool pool;
  static String url;

  @BeforeAll
  static void start() throws Exception {
    pool = ledger.pool();
    url = ledger.url();
  }

  /**
   * Without the batch's own choice among them, one statement would claim one fingerprint twice (PostgreSQL refuses
   * that: "ON CONFLICT DO UPDATE command cannot affect row a second time") and the whole batch, strangers included,
   * would fail. Here one of them opens, the others are answered with it, and the rest of the batch opens as usual.
   */
  @Test
  void opensOfOneFingerprintInOneStatementOpenOneAndTheRestOfTheBatchOpens() throws Exception {
    UUID same = fingerprint();
    List<Open> alike = List.of(open(same, null), open(same, null), open(same, null));
    Open stranger = open(fingerprint(), null);
    Open unclaimed = open(null, null);
    List<Open> batch = List.of(alike.get(1), stranger, alike.get(0), unclaimed, alike.get(2));

    List<GroupCommit.Outcome<Opened>> outcomes = GatewayHarness.await(new OpenBatch(pool, "live", DEAD_AFTER).run(batch, 1));

    assertThat(outcomes).extracting(GroupCommit.Outcome::failure).containsOnlyNulls();
    List<UUID> opened = new ArrayList<>();
    for (int i = 0; i < batch.size(); i++) {
      if (outcomes.get(i).value().earlier() == null) {
        assertThat(outcomes.get(i).value()).isEqualTo(new Opened(batch.get(i).id(), 1));
        opened.add(batch.get(i).id());
      }
    }
    assertThat(opened).contains(stranger.id(), unclaimed.id()).hasSize(3);
    UUID winner = opened.stream().filter(id -> alike.stream().anyMatch(o -> o.id().equals(id))).findFirst().orElseThrow();
    for (int i = 0; i < batch.size(); i++) {
      if (!opened.contains(batch.get(i).id())) {
        assertThat(outcomes.get(i).value()).isEqualTo(new Opened(batch.get(i).id(), 0, new Earlier(winner, MessageStatus.PENDING, true)));
      }
    }
    assertThat(ids("SELECT id FROM messages WHERE id IN " + in(batch))).containsExactlyInAnyOrderElementsOf(opened);
    assertThat(ids("SELECT DISTINCT message_id FROM recipients WHERE message_id IN " + in(batch)))
        .containsExactlyInAnyOrderElementsOf(opened);
    assertThat(ids("SELECT message_id FROM resubmission_claims WHERE message_id IN " + in(batch)))
        .containsExactlyInAnyOrder(winner, stranger.id());
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.pending' AND message_ids && ARRAY"
        + in(batch).replace('(', '[').replace(')', ']') + "::uuid[]")).as("one statement, one event row").isEqualTo(1);
  }

  /** Nodes' statements, each on its own connection, claiming one fingerprint at the same moment: one opens. */
  @Test
  void statementsOnSeveralConnectionsClaimingOneFingerprintAtOnceOpenOne() throws Exception {
    for (int round = 0; round < 20; round++) {
      UUID same = fingerprint();
      List<Open> opens = new ArrayList<>();
      for (int i = 0; i < RACERS; i++) {
        opens.add(open(same, null));
      }
      assertOneOpened(opens, runAtOnce(opens), null);
    }
  }

  /**
   * The claim of a failed row is taken over by compare-and-set (the open names the row it replaces): retries that try
   * it at the same moment on separate connections open one row, and the others are answered with that one.
   */
  @Test
  void statementsTakingOneFailedRowsClaimOverAtOnceOpenOne() throws Exception {
    for (int round = 0; round < 20; round++) {
      UUID same = fingerprint();
      Open first = open(same, null);
      assertThat(GatewayHarness.await(new OpenBatch(pool, "live", DEAD_AFTER).run(List.of(first), 1)).get(0).value())
          .isEqualTo(new Opened(first.id(), 1));
      // The smarthost refused it: settled FAILED_TEMP, as the relay contract settles a 451.
      assertThat(GatewayHarness.await(new SettleBatch(pool).run(List.of(new Settle(first.id(), 1, MessageStatus.FAILED_TEMP, 1,
          451, "4.3.0", "try again later", null)), 1)).get(0).failure()).isNull();
      List<Open> retries = new ArrayList<>();
      for (int i = 0; i < RACERS; i++) {
        retries.add(open(same, null).replacing(first.id()));
      }
      UUID winner = assertOneOpened(retries, runAtOnce(retries), first.id());
      assertThat(LedgerRows.string(url, "SELECT resubmission_of FROM messages WHERE id = '" + winner + "'"))
          .isEqualTo(first.id().toString());
    }
  }

  /**
   * A PENDING claimant is held while a live node vouches for it (docs/contract.md §1.13): its own node, within
   * node.deadAfter of its claim, or any node whose heartbeat lists it in delivery; a node without a heartbeat, or whose
   * heartbeat is older than node.deadAfter, vouches for nothing, whatever its lists say.
   */
  @Test
  void aPendingClaimantIsHeldOnlyByANodeWhoseHeartbeatIsLive() throws Exception {
    UUID same = fingerprint();
    Open first = open(same, null);
    GatewayHarness.await(new OpenBatch(pool, "gone", DEAD_AFTER).run(List.of(first), 1));

    assertThat(retryHeld(same)).as("its node has no heartbeat").isFalse();
    sql("INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at, delivering) VALUES ('gone', 'test', 2,"
        + " now() - interval '1 hour', now() - interval '" + (DEAD_AFTER.toSeconds() + 1) + " seconds', ARRAY['"
        + first.id() + "']::uuid[])");
    assertThat(retryHeld(same)).as("its node's heartbeat, which lists it in delivery, is older than node.deadAfter")
        .isFalse();
    sql("UPDATE nodes SET heartbeat_at = now() WHERE id = 'gone'");
    assertThat(retryHeld(same)).as("its node's heartbeat is live and lists it").isTrue();
    sql("UPDATE nodes SET delivering = '{}' WHERE id = 'gone'");
    assertThat(retryHeld(same)).as("its node's heartbeat is live and the claim is younger than node.deadAfter").isTrue();
    // The claim's hour (V117) moves with it: the bucket is always the hour of claimed_at.
    String earlier = "now() - interval '" + 2 * DEAD_AFTER.toSeconds() + " seconds'";
    sql("UPDATE resubmission_claims SET claimed_at = " + earlier + ", bucket = resubmission_claim_hour(" + earlier + ")"
        + " WHERE message_id = '" + first.id() + "'");
    assertThat(retryHeld(same)).as("its node lives but neither lists it nor claimed it lately").isFalse();
    sql("UPDATE nodes SET held = ARRAY['" + first.id() + "']::uuid[] WHERE id = 'live'");
    assertThat(retryHeld(same)).as("another live node keeps its outcome").isTrue();
    sql("UPDATE nodes SET held = '{}' WHERE id = 'live'");
  }

  /** Whether a retry's open of this fingerprint finds its claimant held; the retry itself opens nothing. */
  private static boolean retryHeld(UUID fingerprint) throws Exception {
    Open retry = open(fingerprint, null);
    Opened o = GatewayHarness.await(new OpenBatch(pool, "live", DEAD_AFTER).run(List.of(retry), 1)).get(0).value();
    assertThat(o.version()).isZero();
    assertThat(o.earlier().status()).isEqualTo(MessageStatus.PENDING);
    return o.earlier().held();
  }

  /** Each open in a statement of its own, all sent at once on the pool's connections, as several nodes would. */
  private static List<Opened> runAtOnce(List<Open> opens) throws Exception {
    List<Future<List<GroupCommit.Outcome<Opened>>>> running = new ArrayList<>();
    for (int i = 0; i < opens.size(); i++) {
      running.add(new OpenBatch(pool, "live", DEAD_AFTER).run(List.of(opens.get(i)), 1));
    }
    List<Opened> answers = new ArrayList<>();
    for (Future<List<GroupCommit.Outcome<Opened>>> f : running) {
      GroupCommit.Outcome<Opened> o = GatewayHarness.await(f).get(0);
      assertThat(o.failure()).isNull();
      answers.add(o.value());
    }
    return answers;
  }

  /** Exactly one of {@code opens} opened; each other was answered with it; the ledger holds it and its claim only. */
  private static UUID assertOneOpened(List<Open> opens, List<Opened> answers, UUID replaced) throws Exception {
    List<UUID> opened = answers.stream().filter(a -> a.earlier() == null).map(Opened::id).toList();
    assertThat(opened).as("opened of %s", answers).hasSize(1);
    UUID winner = opened.get(0);
    assertThat(answers).filteredOn(a -> a.earlier() != null).hasSize(opens.size() - 1)
        .allSatisfy(a -> assertThat(a.earlier()).isEqualTo(new Earlier(winner, MessageStatus.PENDING, true)));
    assertThat(ids("SELECT id FROM messages WHERE id IN " + in(opens))).containsExactly(winner);
    assertThat(ids("SELECT message_id FROM resubmission_claims WHERE message_id IN " + in(opens)
        + (replaced == null ? "" : " OR message_id = '" + replaced + "'"))).containsExactly(winner);
    return winner;
  }

  static Open open(UUID fingerprint, UUID replaces) {
    UUID id = LedgerIds.next();
    return new Open(id, Intake.SMTP, null, "127.0.0.1", "client.test", "a@example.com", "<claim@example.com>", 10, "00",
        "smarthost:test", OffsetDateTime.now(ZoneOffset.UTC),
        List.of(new RecipientEntry("b@example.net", RecipientStatus.PENDING, "250 2.1.5 Ok")), null, null,
        fingerprint == null ? null : new Claim(fingerprint, WINDOW, replaces));
  }

  static UUID fingerprint() {
    return new UUID(RANDOM.nextLong(), RANDOM.nextLong());
  }

  static String in(List<Open> opens) {
    return "(" + String.join(",", opens.stream().map(o -> "'" + o.id() + "'").toList()) + ")";
  }

  static List<UUID> ids(String sql) throws Exception {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  static void sql(String statement) throws Exception {
    ledger.sql(statement);
  }
}
