package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.KeyAnswer;
import dev.ledgerpost.ledger.LedgerMessages.KeyClaim;
import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.tenants.Tenants;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keyed sends in the group commit (docs/design.md §7.2, issue 33): the open's own statement claims and binds each
 * Idempotency-Key, batched with opens without one; of two opens of one key, in one batch or in two racing, exactly one
 * binds it and writes its entry, and the other is answered "held elsewhere" without failing its siblings; a key held
 * with another body is not taken; a retry after an ambiguous commit finds its own binding; a failed sibling fails alone;
 * the quota counts only the opens that may take their key; the settle's statement stores the key's answer or releases it.
 */
class KeyedGroupCommitTest {
  static final Duration DEAD_AFTER = Duration.ofMinutes(10);
  static final String POISON = "poison@example.net";
  static final MutableClock CLOCK = new MutableClock(Instant.now().truncatedTo(ChronoUnit.HOURS).plusSeconds(60));
  static final QuotaCounting QUOTA = new QuotaCounting(Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of(
      "counted", new TenantPolicy(100, 0, 0, 0, false)))), CLOCK, 0.8);

  static Vertx vertx;
  static Pool pool;
  static String url;
  static Context ledgerContext;
  static LedgerWriter writer;

  @BeforeAll
  static void start() throws Exception {
    vertx = Vertx.vertx();
    url = TestDatabase.newDatabase();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      st.execute("ALTER TABLE recipients ADD CONSTRAINT no_poison CHECK (address <> '" + POISON + "')");
    }
    pool = TestDatabase.pool(vertx, url, 8);
    ledgerContext = vertx.getOrCreateContext();
    writer = new LedgerWriter(ledgerContext, pool, "test-node", TransactionPolicy.Listener.NONE, Duration.ofMillis(500),
        GatewayMetrics.NOOP, () -> {}, DEAD_AFTER, QUOTA);
  }

  @AfterAll
  static void stop() throws Exception {
    GatewayHarness.await(pool.close());
    GatewayHarness.await(vertx.close());
  }

  @Test
  void keyedAndUnkeyedOpensShareOneStatementAndEachKeyIsBoundToItsEntry() throws Exception {
    List<Open> batch = List.of(open(null), keyed("mixed-1", "body"), open(null), keyed("mixed-2", "body"));
    List<GroupCommit.Outcome<Opened>> out = run(batch, 1);
    for (int i = 0; i < batch.size(); i++) {
      assertThat(out.get(i).value()).isEqualTo(new Opened(batch.get(i).id(), 1));
    }
    assertThat(keyRow("mixed-1")).isEqualTo(batch.get(1).id() + " OPENED " + batch.get(1).id());
    assertThat(keyRow("mixed-2")).isEqualTo(batch.get(3).id() + " OPENED " + batch.get(3).id());
    // One statement: one outbox row holds the four entries' events.
    assertThat(LedgerRows.count(url, "SELECT count(DISTINCT seq) FROM outbox_events WHERE type = 'message.pending' AND message_id IN ("
        + ids(batch) + ")")).isEqualTo(1);
  }

  @Test
  void aKeyRepeatedInOneBatchBindsOnlyTheFirstAndTheOtherIsAnsweredHeldWhileItsSiblingsOpen() throws Exception {
    Open first = keyed("twice", "body");
    Open again = keyed("twice", "body");
    Open stranger = open(null);
    List<GroupCommit.Outcome<Opened>> out = run(List.of(first, again, stranger), 1);
    assertThat(out.get(0).value()).isEqualTo(new Opened(first.id(), 1));
    assertThat(out.get(1).value()).isEqualTo(Opened.keyHeldElsewhere(again.id()));
    assertThat(out.get(2).value()).isEqualTo(new Opened(stranger.id(), 1));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id = '" + again.id() + "'")).isZero();
    assertThat(keyRow("twice")).isEqualTo(first.id() + " OPENED " + first.id());
  }

  @Test
  void aKeyRepeatedInALaterBatchOrWithAnotherBodyIsNotTakenAndNothingIsWritten() throws Exception {
    Open first = keyed("later", "body");
    assertThat(run(List.of(first), 1).get(0).value()).isEqualTo(new Opened(first.id(), 1));
    Open same = keyed("later", "body");
    Open otherBody = keyed("later", "another body");
    Open stranger = open(null);
    List<GroupCommit.Outcome<Opened>> out = run(List.of(same, stranger), 1);
    assertThat(out.get(0).value()).isEqualTo(Opened.keyHeldElsewhere(same.id()));
    assertThat(out.get(1).value()).isEqualTo(new Opened(stranger.id(), 1));
    assertThat(run(List.of(otherBody), 1).get(0).value()).isEqualTo(Opened.keyHeldElsewhere(otherBody.id()));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id IN ('" + same.id() + "', '" + otherBody.id() + "')"))
        .isZero();
    assertThat(keyRow("later")).isEqualTo(first.id() + " OPENED " + first.id());
  }

  @Test
  void batchesRacingForOneKeyOnSeparateConnectionsBindItExactlyOnce() throws Exception {
    List<Open> racers = new ArrayList<>();
    List<Future<List<GroupCommit.Outcome<Opened>>>> running = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      Open o = keyed("race", "body");
      racers.add(o);
      running.add(new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA).run(List.of(o, open(null)), 1));
    }
    int bound = 0;
    UUID winner = null;
    for (int i = 0; i < racers.size(); i++) {
      List<GroupCommit.Outcome<Opened>> out = GatewayHarness.await(running.get(i));
      assertThat(out.get(1).value().version()).isEqualTo(1); // the sibling opens, whoever wins the key
      if (out.get(0).value().version() == 1) {
        bound++;
        winner = racers.get(i).id();
      } else {
        assertThat(out.get(0).value().keyLost()).isTrue();
      }
    }
    assertThat(bound).isEqualTo(1);
    assertThat(keyRow("race")).isEqualTo(winner + " OPENED " + winner);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id IN (" + ids(racers) + ")")).isEqualTo(1);
  }

  @Test
  void aRetryAfterAnAmbiguousCommitFindsItsOwnBindingAndOpens() throws Exception {
    List<Open> batch = List.of(keyed("ambiguous", "body"), open(null));
    run(batch, 1);
    List<GroupCommit.Outcome<Opened>> again = run(batch, 2); // ON CONFLICT DO NOTHING, as after an ambiguous commit
    assertThat(again.get(0).value()).isEqualTo(new Opened(batch.get(0).id(), 1));
    assertThat(again.get(1).value()).isEqualTo(new Opened(batch.get(1).id(), 1));
    assertThat(keyRow("ambiguous")).isEqualTo(batch.get(0).id() + " OPENED " + batch.get(0).id());
  }

  @Test
  void theQuotaCountsOnlyTheOpensThatTakeTheirKey() throws Exception {
    Open first = keyed("quota", "body", "counted");
    run(List.of(first), 1);
    long before = LedgerRows.count(url, "SELECT hour_used FROM quota_usage WHERE user_name = 'counted'");
    List<GroupCommit.Outcome<Opened>> out = run(List.of(keyed("quota", "body", "counted"), keyed("quota-2", "body", "counted")), 1);
    assertThat(out.get(0).value().keyLost()).isTrue();
    assertThat(out.get(1).value().version()).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT hour_used FROM quota_usage WHERE user_name = 'counted'")).isEqualTo(before + 1);
  }

  @Test
  void aKeyedOpenWhoseBatchSiblingFailsOpensAndTheFailedOnesKeyIsNotWritten() throws Exception {
    List<Open> opens = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      opens.add(i % 2 == 0 ? keyed("sibling-" + i, "body") : open(null));
    }
    Open poisoned = keyed("sibling-poisoned", "body", null, POISON);
    opens.add(4, poisoned);
    List<Future<Opened>> answers = burst(opens);
    for (int i = 0; i < opens.size(); i++) {
      Open o = opens.get(i);
      if (o == poisoned) {
        assertThat(failure(answers.get(i))).isInstanceOf(StoreException.class);
      } else {
        assertThat(GatewayHarness.await(answers.get(i))).isEqualTo(new Opened(o.id(), 1));
      }
    }
    for (int i = 0; i < 9; i++) {
      if (opens.get(i).key() != null && opens.get(i) != poisoned) {
        assertThat(keyRow(opens.get(i).key().ref().key())).isEqualTo(opens.get(i).id() + " OPENED " + opens.get(i).id());
      }
    }
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM idempotency_keys WHERE key = 'sibling-poisoned'")).isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE id = '" + poisoned.id() + "'")).isZero();
  }

  @Test
  void theSettleStoresTheKeysAnswerOrReleasesItInItsOwnStatement() throws Exception {
    Open sent = keyed("answered", "body");
    Open deferred = keyed("released", "body");
    Open plain = open(null);
    run(List.of(sent, deferred, plain), 1);
    String response = "{\"status\": 200, \"body\": \"{}\"}";
    List<Settle> settles = List.of(
        new Settle(sent.id(), 1, MessageStatus.SENT, 1, 250, "2.0.0", "Ok", null, null).answering(
            new KeyAnswer(sent.key().ref(), response)),
        new Settle(deferred.id(), 1, MessageStatus.FAILED_TEMP, 1, 451, "4.0.0", "later", null, null).answering(
            new KeyAnswer(deferred.key().ref(), null)),
        new Settle(plain.id(), 1, MessageStatus.SENT, 1, 250, "2.0.0", "Ok", null, null));
    List<GroupCommit.Outcome<LedgerMessages.Settled>> out = GatewayHarness.await(new SettleBatch(pool).run(settles, 1));
    assertThat(out).allMatch(o -> o.failure() == null);
    assertThat(LedgerRows.string(url, "SELECT state || ' ' || (response->>'status') FROM idempotency_keys WHERE key = 'answered'"))
        .isEqualTo("COMPLETED 200");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM idempotency_keys WHERE key = 'released'")).isZero();
    // A settle that commits nothing for its message (a repeated one, a newer fact) leaves the key as it is.
    Open stale = keyed("stale", "body");
    run(List.of(stale), 1);
    GatewayHarness.await(new SettleBatch(pool).run(List.of(new Settle(stale.id(), 2, MessageStatus.SENT, 1, 250, "2.0.0", "Ok",
        null, null).answering(new KeyAnswer(stale.key().ref(), response))), 1));
    assertThat(keyRow("stale")).isEqualTo(stale.id() + " OPENED " + stale.id());
  }

  /**
   * The keyed statements are longer than the Vert.x client's default prepared-statement cache limit (2,048 characters):
   * they stay within the 16,384 that platform.db.DatabaseTarget is to set (issue 33, cut 1), so that they are prepared
   * once per connection, not at every execution; a longer comment must not silently undo that.
   */
  @Test
  void theKeyedStatementsFitThePreparedStatementCacheLimit() {
    assertThat(OpenBatch.KEYED_FIRST.length()).isLessThan(16_384);
    assertThat(OpenBatch.KEYED_AGAIN.length()).isLessThan(16_384);
    assertThat(SettleBatch.KEYED.length()).isLessThan(16_384);
  }

  /** V116: the key's answer (the settle's update) leaves its indexed columns alone, and its page keeps room for it. */
  @Test
  void theKeysTableLeavesRoomForTheAnswersHotUpdate() throws Exception {
    assertThat(LedgerRows.string(url, "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'idempotency_keys'"))
        .contains("fillfactor=50");
  }

  static List<GroupCommit.Outcome<Opened>> run(List<Open> batch, int attempt) throws Exception {
    return GatewayHarness.await(new OpenBatch(pool, "test-node", DEAD_AFTER, QUOTA).run(batch, attempt));
  }

  /** Every open submitted on the ledger's context at once: the first goes alone, the rest queue into one batch. */
  static List<Future<Opened>> burst(List<Open> opens) throws Exception {
    CompletableFuture<List<Future<Opened>>> submitted = new CompletableFuture<>();
    ledgerContext.runOnContext(v -> {
      List<Future<Opened>> answers = new ArrayList<>();
      for (Open o : opens) {
        answers.add(writer.open(o));
      }
      submitted.complete(answers);
    });
    List<Future<Opened>> answers = submitted.get(10, TimeUnit.SECONDS);
    Future.join(answers).otherwiseEmpty().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    return answers;
  }

  static Throwable failure(Future<?> f) {
    assertThat(f.failed()).as("failed").isTrue();
    return f.cause();
  }

  static String keyRow(String key) throws Exception {
    return LedgerRows.string(url, "SELECT operation_id || ' ' || state || ' ' || message_id FROM idempotency_keys WHERE key = '"
        + key + "'");
  }

  static String ids(List<Open> opens) {
    return String.join(", ", opens.stream().map(o -> "'" + o.id() + "'").toList());
  }

  static Open open(String user) {
    return open(user, "b@example.net");
  }

  static Open open(String user, String recipient) {
    return new Open(LedgerIds.next(), Intake.HTTP, user, "127.0.0.1", null, "a@example.com", "<k@example.com>", 10,
        "00", "smarthost:test", OffsetDateTime.now(ZoneOffset.UTC),
        List.of(new RecipientEntry(recipient, RecipientStatus.PENDING, "250 2.1.5 Ok")));
  }

  static Open keyed(String key, String body) {
    return keyed(key, body, null);
  }

  static Open keyed(String key, String body, String user) {
    return keyed(key, body, user, "b@example.net");
  }

  static Open keyed(String key, String body, String user, String recipient) {
    Open o = open(user, recipient);
    return o.keyed(new KeyClaim(new KeyRef("owner", key, o.id()), body, Duration.ofMinutes(5), Duration.ofHours(24)));
  }
}
