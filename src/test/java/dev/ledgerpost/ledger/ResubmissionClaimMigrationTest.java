package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * V117 moves V98's claims into their hours and days (docs/data-model.md §5.32) and keeps them valid: after the
 * migration a live claim of two days ago and one of an hour ago still answer a retry, and an expired one is no one's.
 */
class ResubmissionClaimMigrationTest {
  @Test
  void theClaimsOfV98AreMovedIntoTheirHoursAndStillHold() throws Exception {
    String url = TestDatabase.newEmptyDatabase();
    DatabaseTarget target = DatabaseTarget.fromUrl(url, Duration.ofMillis(1000));
    PartitionMigrationTest.flyway(target, new LedgerPartitionsMigration()).target("115").load().migrate();
    UUID twoDays = UUID.randomUUID();
    UUID anHour = UUID.randomUUID();
    UUID expired = UUID.randomUUID();
    UUID[] holders = {LedgerIds.next(), LedgerIds.next(), LedgerIds.next()};
    sql(url, "INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at) VALUES ('live', 'test', 1, now(), now())");
    sql(url, "INSERT INTO resubmission_claims (fingerprint, message_id, claimed_at, expires_at) VALUES"
        + " ('" + twoDays + "', '" + holders[0] + "', now() - interval '2 days', now() + interval '3 days'),"
        + " ('" + anHour + "', '" + holders[1] + "', now() - interval '1 hour', now() + interval '119 hours'),"
        + " ('" + expired + "', '" + holders[2] + "', now() - interval '6 days', now() - interval '1 day')");

    PartitionMigrationTest.flyway(target, new LedgerPartitionsMigration()).load().migrate();

    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims WHERE bucket = resubmission_claim_hour(claimed_at)"))
        .isEqualTo(3);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims_default")).as("each in its day's partition").isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims_indexed WHERE through = resubmission_claim_hour(now()) / 24 * 24"))
        .as("the closed days' fingerprint indexes built").isEqualTo(1);
    Vertx vertx = Vertx.vertx();
    Pool pool = TestDatabase.pool(vertx, url, 2);
    try {
      for (int i = 0; i < 2; i++) {
        Open retry = ResubmissionClaimWindowTest.open(i == 0 ? twoDays : anHour, null);
        Opened o = GatewayHarness.await(new OpenBatch(pool, "live", Duration.ofMinutes(10)).run(List.of(retry), 1)).get(0).value();
        assertThat(o.version()).as("a retry of a moved live claim opens nothing").isZero();
        assertThat(o.earlier().id()).isEqualTo(holders[i]);
      }
      Open fresh = ResubmissionClaimWindowTest.open(expired, null);
      assertThat(GatewayHarness.await(new OpenBatch(pool, "live", Duration.ofMinutes(10)).run(List.of(fresh), 1)).get(0).value())
          .isEqualTo(new Opened(fresh.id(), 1));
    } finally {
      GatewayHarness.await(pool.close());
      GatewayHarness.await(vertx.close());
    }
  }

  static void sql(String url, String statement) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }
}
