package dev.ledgerpost.faults;

import static dev.ledgerpost.faults.LockContentionTest.ledgerId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A downstream connection lost before or after the final dot: nothing delivered, or outcome unknown. */
class LostConnectionTest {
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  void start(ScriptedSmtpServer.Script script, Map<String, Object> extra) throws Exception {
    Map<String, Object> o = GatewayHarness.defaults(gateway.smarthost(script).port());
    o.putAll(extra);
    gateway.begin(o);
  }

  @Test
  void closedAfterTheFinalDotIsUnknownAnd451AndNeverResentByTheGateway() throws Exception {
    start(new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        return Future.succeededFuture(n == 1 ? null : "250 2.0.0 Ok: queued as DS" + n); // first: hang up
      }
    }, Map.of());
    String first;
    String second;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      first = send("Message-ID: <lost@example.com>\r\nSubject: lost\r\n\r\nbody");
      assertThat(first).startsWith("451 4.4.2");
      String id = ledgerId(first);
      assertThat(audit.errorsContaining("CRITICAL audit_event=delivery_outcome_unknown", id, "msg_id=<lost@example.com>"))
          .hasSize(1);
      assertThat(status(id)).isEqualTo("UNKNOWN");
      assertThat(scalar("SELECT count(*) FROM recipients WHERE status = 'UNKNOWN'")).isEqualTo(1);
      io.vertx.core.json.JsonObject op = new io.vertx.core.json.JsonObject(gateway.get("/api/v1/operations/" + id).body());
      assertThat(op.getJsonObject("message").getString("status")).isEqualTo("UNKNOWN");
      assertThat(op.getJsonObject("ledger").getBoolean("settled")).isTrue();
      assertThat(op.getJsonObject("ledger").getBoolean("retrying")).isFalse();
      assertThat(op.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo("UNKNOWN");
      // The RCPT 250 is not a delivery: it is shown as rcptReply, and the final reply is null, as in the message detail.
      io.vertx.core.json.JsonObject opRecipient = op.getJsonArray("recipients").getJsonObject(0);
      assertThat(opRecipient.getString("rcptReply")).isEqualTo("250 2.1.5 Recipient ok");
      assertThat(opRecipient.containsKey("reply")).isTrue();
      assertThat(opRecipient.getString("reply")).isNull();
      assertThat(op.getJsonObject("message").getString("downstreamReply")).isNull();
      io.vertx.core.json.JsonObject detail = new io.vertx.core.json.JsonObject(gateway.get("/api/v1/messages/" + id).body());
      io.vertx.core.json.JsonObject detailRecipient = detail.getJsonArray("recipients").getJsonObject(0);
      assertThat(detailRecipient.getString("rcptReply")).isEqualTo(opRecipient.getString("rcptReply"));
      assertThat(detailRecipient.getString("reply")).isNull();
      assertThat(detail.containsKey("resolution")).isTrue();
      assertThat(detail.getValue("resolution")).as("nobody resolved it yet").isNull();
      // The client retries the same message: held until the first row is resolved (docs/contract.md §1.13), not sent.
      second = send("Message-ID: <lost@example.com>\r\nSubject: lost\r\n\r\nbody");
    }
    assertThat(second).startsWith("451 4.4.2 Outcome of previous submission " + ledgerId(first) + " not yet known");
    assertThat(status(ledgerId(first))).isEqualTo("UNKNOWN");
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1); // the client's first copy only: nothing was re-sent
    assertThat(scalar("SELECT count(*) FROM messages")).isEqualTo(1);
  }

  @Test
  void unknownOutcomeCanBeAnswered250WhenConfigured() throws Exception {
    start(new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        return Future.succeededFuture(null);
      }
    }, Map.of("delivery.unknownOutcomeReply", "250"));
    String reply = send("Subject: lost\r\n\r\nbody");
    assertThat(reply).startsWith("250 2.0.0 Ok: ").contains("outcome unknown");
    assertThat(status(ledgerId(reply))).isEqualTo("UNKNOWN");
  }

  @Test
  void noReplyToTheFinalDotWithinTheDataTimeoutIsUnknown() throws Exception {
    Promise<String> never = Promise.promise();
    start(new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        return never.future();
      }
    }, Map.of("downstream.dataTimeout", "500ms"));
    String reply = send("Subject: slow\r\n\r\nbody");
    assertThat(reply).startsWith("451 4.4.2");
    assertThat(status(ledgerId(reply))).isEqualTo("UNKNOWN");
    assertThat(gateway.downstream().messages()).hasSize(1);
  }

  @Test
  void closedBeforeTheBodyIsFailedTempAnd451() throws Exception {
    start(new ScriptedSmtpServer.Script() {
      @Override
      public String data() {
        return null; // hang up on DATA: no body, so certainly no delivery
      }
    }, Map.of());
    String reply = send("Subject: never sent\r\n\r\nbody");
    assertThat(reply).startsWith("451 4.4.2").contains("nothing was delivered");
    assertThat(scalar("SELECT count(*) FROM messages WHERE status = 'FAILED_TEMP'")).isEqualTo(1);
    assertThat(scalar("SELECT count(*) FROM recipients WHERE status = 'FAILED_TEMP'")).isEqualTo(1);
    assertThat(gateway.downstream().messages()).isEmpty();
  }

  private String send(String body) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), body);
    }
  }

  private String status(String id) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT status FROM messages WHERE id = '" + id + "'")) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  private long scalar(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }
}
