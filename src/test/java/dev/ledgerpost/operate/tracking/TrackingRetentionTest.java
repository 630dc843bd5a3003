package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Vertx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Tracking's retention (docs/data-model.md §5.24): facts and mappings of ids below the cut-off go, a bounded batch at a time. */
class TrackingRetentionTest {
  private static void fact(Connection c, UUID message, int n) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("""
        INSERT INTO delivery_facts (message_id, idx, state, at, source, evidence, event_key)
        VALUES (?, 0, 'delivered', now(), 'postfix-log', 'line', ?)""")) {
      ps.setObject(1, message);
      ps.setBytes(2, new byte[] {(byte) n});
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO tracking_queue_ids VALUES (?, ?, now())")) {
      ps.setString(1, "ABCDEF" + n);
      ps.setObject(2, message);
      ps.executeUpdate();
    }
  }

  @Test
  void factsAndMappingsOfRowsPastRetentionAreDeletedInBoundedBatches() throws Exception {
    String url = TestDatabase.newDatabase();
    Instant now = Instant.now();
    UUID old = LedgerIds.lowest(now.minus(Duration.ofDays(500)));
    UUID recent = LedgerIds.next();
    try (Connection c = TestDatabase.connect(url)) {
      for (int i = 0; i < 3; i++) {
        fact(c, old, i);
      }
      fact(c, recent, 9);
    }
    Vertx vertx = Vertx.vertx();
    try {
      Database db = Database.open(vertx, DatabaseTarget.fromUrl(url, Duration.ofSeconds(10)), 2, "test", new GatewayMetrics() {});
      TrackingStore store = new TrackingStore(db, null); // no batch recorded here: no bounce to feed the list
      UUID cutoff = LedgerIds.lowest(now.minus(Duration.ofDays(400)));
      assertThat(GatewayHarness.await(store.prune(cutoff, 2))).as("one bounded batch").isEqualTo(2);
      assertThat(GatewayHarness.await(store.prune(cutoff, 2))).isEqualTo(1);
      assertThat(GatewayHarness.await(store.prune(cutoff, 2))).isZero();
      try (Connection c = TestDatabase.connect(url)) {
        for (int i = 10; i < 15; i++) {
          fact(c, old, i);
        }
      }
      assertThat(GatewayHarness.await(store.pruneAll(cutoff, 2, 2))).as("at most two batches").isEqualTo(4);
      assertThat(GatewayHarness.await(store.pruneAll(cutoff, 2, 100))).as("batches while they come back full").isEqualTo(1);
      GatewayHarness.await(db.close());
    } finally {
      GatewayHarness.await(vertx.close());
    }
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts WHERE message_id = '" + recent + "'")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM tracking_queue_ids")).isEqualTo(1);
  }
}
