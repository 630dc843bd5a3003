package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;

import static dev.ledgerpost.ledger.GroupCommitTest.await;
import static dev.ledgerpost.ledger.GroupCommitTest.failure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** docs/contract.md §3.1: transitions are monotonic and versioned; a late or repeated settle never overwrites a newer fact. */
class LedgerVersioningTest {
  static Vertx vertx;
  static Pool pool;
  static LedgerWriter ledger;
  static String url;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx();
    url = TestDatabase.newDatabase();
    DatabaseTarget target = DatabaseTarget.fromUrl(url, Duration.ofMillis(250));
    Migrations.migrate(target);
    pool = PgBuilder.pool().connectingTo(target.options()).using(vertx).build();
    ledger = new LedgerWriter(vertx.getOrCreateContext(), pool, "test-node", TransactionPolicy.Listener.NONE, Duration.ofMillis(250),
        dev.ledgerpost.platform.observability.GatewayMetrics.NOOP, () -> {});
  }

  @AfterAll
  static void stop() throws Exception {
    await(pool.close());
    await(vertx.close());
  }

  static Open open(UUID id) {
    return new Open(id, Intake.SMTP, null, "127.0.0.1", "client.test", "a@example.com", "<v@example.com>", 10, "00",
        "smarthost:test", OffsetDateTime.now(ZoneOffset.UTC), List.of(
            new RecipientEntry("b@example.net", RecipientStatus.PENDING, "250 2.1.5 Ok"),
            new RecipientEntry("c@example.net", RecipientStatus.REJECTED, "550 5.1.1 No")));
  }

  static Settle settle(UUID id, int version, MessageStatus target) {
    return new Settle(id, version, target, 1, 250, "2.0.0", "Ok", null);
  }

  @Test
  void openIsIdempotentAndSettleMovesToVersionTwoOnce() throws Exception {
    UUID id = UUID.randomUUID();
    assertThat(await(ledger.open(open(id))).version()).isEqualTo(1);
    assertThat(await(ledger.open(open(id))).version()).isEqualTo(1); // a replay after an ambiguous commit
    assertThat(scalar("SELECT count(*) FROM recipients WHERE message_id = '" + id + "'")).isEqualTo(2);

    assertThat(await(ledger.settle(settle(id, 1, MessageStatus.SENT))).version()).isEqualTo(2);
    // The identical settle again (a retry whose first commit was not acknowledged) reports the fact, writes nothing.
    assertThat(await(ledger.settle(settle(id, 1, MessageStatus.SENT))).version()).isEqualTo(2);
    assertThat(scalar("SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "'")).isEqualTo(2);
    assertThat(scalar("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'ACCEPTED'")).isEqualTo(1);
    assertThat(scalar("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'REJECTED'")).isEqualTo(1);
  }

  @Test
  void aLateSettleWithAnotherOutcomeIsStaleAndChangesNothing() throws Exception {
    UUID id = UUID.randomUUID();
    await(ledger.open(open(id)));
    await(ledger.settle(settle(id, 1, MessageStatus.SENT)));
    StoreException late = failure(ledger.settle(settle(id, 1, MessageStatus.FAILED_TEMP)));
    assertThat(late.kind()).isEqualTo(StoreException.Kind.STALE);
    StoreException wrongVersion = failure(ledger.settle(settle(id, 2, MessageStatus.UNKNOWN)));
    assertThat(wrongVersion.kind()).isEqualTo(StoreException.Kind.STALE);
    assertThat(scalar("SELECT version FROM messages WHERE id = '" + id + "'")).isEqualTo(2);
    assertThat(scalar("SELECT count(*) FROM messages WHERE id = '" + id + "' AND status = 'SENT'")).isEqualTo(1);
  }

  @Test
  void settlingAnUnknownMessageIsNotFoundNotSuccess() throws Exception {
    StoreException e = failure(ledger.settle(settle(UUID.randomUUID(), 1, MessageStatus.SENT)));
    assertThat(e.kind()).isEqualTo(StoreException.Kind.NOT_FOUND);
  }

  @Test
  void aSettleThatTouchesFewerRecipientsThanExpectedRollsBack() throws Exception {
    UUID id = UUID.randomUUID();
    await(ledger.open(open(id)));
    Settle wrongCount = new Settle(id, 1, MessageStatus.SENT, 2, 250, "2.0.0", "Ok", null);
    assertThat(failure(ledger.settle(wrongCount)).kind()).isEqualTo(StoreException.Kind.STALE);
    assertThat(scalar("SELECT version FROM messages WHERE id = '" + id + "'")).isEqualTo(1);
    assertThat(scalar("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'PENDING'")).isEqualTo(1);
  }

  static long scalar(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
