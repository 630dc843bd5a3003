package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * V118 moves the publication state out of the outbox rows (docs/data-model.md §5.33): a ledger published up to some
 * number before it goes on numbering from there, its published rows keep their numbers and times, and a row committed
 * but not yet published before it is published after it, once.
 */
class OutboxPublicationMigrationTest {
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  @Test
  void publishedRowsKeepTheirNumbersAndAnUnpublishedRowIsPublishedNext() throws Exception {
    String url = TestDatabase.newEmptyDatabase();
    DatabaseTarget target = DatabaseTarget.fromUrl(url, Duration.ofMillis(1000));
    PartitionMigrationTest.flyway(target, new LedgerPartitionsMigration()).target("115").load().migrate();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      // Two published rows (the second a batch of three events: numbers 2..4), and one not yet published.
      st.execute("INSERT INTO outbox (event_id, message_id, type, payload, pub_seq, published_at) VALUES "
          + "('one', gen_random_uuid(), 'test.event', '{}', 1, '2026-12-01T00:00:00Z')");
      st.execute("INSERT INTO outbox (message_ids, versions, statuses, type, pub_seq, published_at) VALUES "
          + "(ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid()], ARRAY[2, 2, 2], ARRAY['SENT', 'SENT', 'SENT'],"
          + " 'message.settled', 2, '2026-12-01T00:00:01Z')");
      st.execute("UPDATE outbox_publisher SET last_pub_seq = 4");
      st.execute("INSERT INTO outbox (event_id, message_id, type, payload) VALUES ('late', gen_random_uuid(), 'test.event', '{}')");
    }
    PartitionMigrationTest.flyway(target, new LedgerPartitionsMigration()).load().migrate();

    assertThat(LedgerRows.string(url, "SELECT string_agg(pub_seq || '@' || to_char(published_at AT TIME ZONE 'UTC', 'SS'), ',' "
        + "ORDER BY pub_seq) FROM outbox_pub")).isEqualTo("1@00,2@01");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE pub_seq IS NULL")).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE xid IS NULL")).as("published before: never scanned")
        .isEqualTo(2);
    assertThat(LedgerRows.count(url, "SELECT last_pub_seq FROM outbox_publisher")).isEqualTo(4);

    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("ledger.url", url);
    config.put("notify.pollInterval", "100ms");
    gateway.begin(config);
    Poll.until(Duration.ofSeconds(15), "the late row published", () ->
        LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE pub_seq IS NULL") == 0);
    assertThat(LedgerRows.count(url, "SELECT pub_seq FROM outbox_events WHERE event_id = 'late'")).isEqualTo(5);
    assertThat(LedgerRows.count(url, "SELECT last_pub_seq FROM outbox_publisher")).isEqualTo(5);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_pub")).isEqualTo(3);
  }
}
