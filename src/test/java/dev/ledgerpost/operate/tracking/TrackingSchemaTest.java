package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * V109's tracking tables (docs/data-model.md §5.24): one fact per source per event whatever reads it again, the states,
 * categories and the sanitised reply checked by the database, and an erasure reaching a fact's reply and evidence.
 */
class TrackingSchemaTest {
  static final String ADDRESS = "gone.user@example.net";
  static final String LINE = "Dec  4 20:01:02 mx postfix/smtp[123]: 4XyZ1abcDEF: to=<" + ADDRESS + ">, relay=mx.example.net[192.0.2.1]:25, "
      + "delay=0.2, delays=0.1/0/0.05/0.05, dsn=5.1.1, status=bounced (host mx.example.net[192.0.2.1] said: 550 5.1.1 <" + ADDRESS
      + ">: User unknown (in reply to RCPT TO command))";

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension();

  private static int insert(Connection c, UUID message, String state, String category, String reply, byte[] key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("""
        INSERT INTO delivery_facts (message_id, idx, state, at, remote_host, dsn, reply, category, rule, source, evidence,
                                    queue_id, event_key)
        VALUES (?, 0, ?, ?, 'mx.example.net', '5.1.1', ?, ?, 'invalid-codes', 'postfix-log', ?, '4XyZ1abcDEF', ?)
        ON CONFLICT (message_id, idx, source, event_key) DO NOTHING""")) {
      ps.setObject(1, message);
      ps.setString(2, state);
      ps.setTimestamp(3, Timestamp.from(Instant.parse("2026-12-04T20:01:02Z")));
      ps.setString(4, reply);
      ps.setString(5, category);
      ps.setString(6, LINE);
      ps.setBytes(7, key);
      return ps.executeUpdate();
    }
  }

  @Test
  void aFactIsRecordedOncePerSourceAndEventAndTheDatabaseRefusesWhatNoWriterMayWrite() throws Exception {
    UUID message = UUID.randomUUID();
    byte[] key = new byte[32];
    key[0] = 1;
    try (Connection c = TestDatabase.connect(gateway.databaseUrl())) {
      String reply = "550 5.1.1 <" + ADDRESS + ">: User unknown";
      assertThat(insert(c, message, "bounced", "invalid_recipient", reply, key)).isEqualTo(1);
      assertThat(insert(c, message, "bounced", "invalid_recipient", reply, key)).as("the same line read again").isZero();
      key[0] = 2;
      assertThat(insert(c, message, "deferred", "mailbox_full", reply, key)).as("another event").isEqualTo(1);
      key[0] = 3;
      assertThatThrownBy(() -> insert(c, message, "bounced", "invalid_recipient", "550 bad\r\nreply", new byte[] {3}))
          .as("a control character in a reply").isInstanceOf(SQLException.class).hasMessageContaining("delivery_facts");
      assertThatThrownBy(() -> insert(c, message, "bounced", null, reply, new byte[] {4}))
          .as("a bounce without a category").isInstanceOf(SQLException.class).hasMessageContaining("delivery_facts");
      assertThatThrownBy(() -> insert(c, message, "delivered", "other", reply, new byte[] {5}))
          .as("a delivery with one").isInstanceOf(SQLException.class).hasMessageContaining("delivery_facts");
      assertThatThrownBy(() -> insert(c, message, "sent", null, reply, new byte[] {6}))
          .as("a state that is not one").isInstanceOf(SQLException.class).hasMessageContaining("delivery_facts");
      assertThatThrownBy(() -> insert(c, message, "bounced", "spam", reply, new byte[] {7}))
          .as("a category that is not one").isInstanceOf(SQLException.class).hasMessageContaining("delivery_facts");
    }
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM delivery_facts WHERE message_id = '" + message + "'"))
        .isEqualTo(2);
  }

  @Test
  void anErasureReplacesTheAddressInAFactsReplyAndEvidence() throws Exception {
    UUID message = UUID.randomUUID();
    try (Connection c = TestDatabase.connect(gateway.databaseUrl())) {
      assertThat(insert(c, message, "bounced", "invalid_recipient", "550 5.1.1 <" + ADDRESS + ">: User unknown", new byte[] {1})).isEqualTo(1);
    }
    HttpResponse<String> r = gateway.post("/api/v1/erasures", new JsonObject().put("address", ADDRESS).put("reason", "ticket 9").encode(),
        "X-Operator", "dpo");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    String hash = new JsonObject(r.body()).getString("addressHash");
    assertThat(new JsonObject(r.body()).getJsonObject("rows").getLong("delivery_facts")).isEqualTo(1);
    String where = " FROM delivery_facts WHERE message_id = '" + message + "'";
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT reply" + where)).isEqualTo("550 5.1.1 <" + hash + ">: User unknown");
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT evidence" + where)).doesNotContain(ADDRESS).contains("to=<" + hash + ">");
  }
}
