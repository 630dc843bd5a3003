package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** docs/contract.md §1.9: the downstream's verdicts on RCPT and DATA reach the client as the reply table says, and are recorded. */
class DownstreamVerdictsTest {
  static volatile Function<String, String> rcptReply;
  static volatile String dataReply;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public String rcpt(String to) {
      return rcptReply.apply(to);
    }

    @Override
    public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
      return Future.succeededFuture(dataReply);
    }
  });

  @BeforeEach
  void acceptEverything() {
    rcptReply = to -> "250 2.1.5 Ok";
    dataReply = "250 2.0.0 Ok: queued as ABC";
  }

  @Test
  void permanentRcptRefusalIsMirroredAndLeavesNoRowWhenNoDataFollows() throws Exception {
    rcptReply = to -> "550 5.1.1 <" + to + ">: Recipient address rejected: User unknown";
    long rowsBefore = count("SELECT count(*) FROM messages");
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      c.command("EHLO client.test");
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("250 2.1.0");
      String reply = c.command("RCPT TO:<nobody@example.net>");
      assertThat(reply).startsWith("550 5.1.1 <nobody@example.net>: Recipient address rejected");
      assertThat(c.command("DATA")).startsWith("554 5.5.1");
      assertThat(c.command("QUIT")).startsWith("221");
    }
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(rowsBefore);
    assertThat(gateway.downstream().dataCommands()).isZero();
  }

  @Test
  void transientRcptRefusalIsMirroredAsTransient() throws Exception {
    rcptReply = to -> to.startsWith("busy") ? "450 4.2.1 Mailbox busy, try later" : "250 2.1.5 Ok";
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      c.command("EHLO client.test");
      c.command("MAIL FROM:<a@example.com>");
      assertThat(c.command("RCPT TO:<busy@example.net>")).isEqualTo("450 4.2.1 Mailbox busy, try later");
      assertThat(c.command("RCPT TO:<ok@example.net>")).startsWith("250 2.1.5");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: partial\r\n\r\nhello\r\n.\r\n");
      String reply = c.reply();
      assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
      JsonObject row = detail(ledgerId(reply));
      assertThat(row.getString("status")).isEqualTo("SENT");
      // The refused recipient is on record with its RCPT reply, the accepted one with the final reply.
      assertThat(row.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo("REJECTED");
      assertThat(row.getJsonArray("recipients").getJsonObject(0).getString("rcptReply")).startsWith("450 4.2.1");
      assertThat(row.getJsonArray("recipients").getJsonObject(1).getString("status")).isEqualTo("ACCEPTED");
    }
  }

  @Test
  void transientDataRefusalIs451WithTheDownstreamCodeAndRecordedFailedTemp() throws Exception {
    refusedAtData("452 4.3.1 Insufficient system storage", "451 4.3.1 Downstream: Insufficient system storage", "FAILED_TEMP");
  }

  @Test
  void permanentDataRefusalIsTheDownstream5yzAndRecordedFailedPerm() throws Exception {
    JsonObject row = refusedAtData("554 5.7.1 Message rejected as spam", "554 5.7.1 Downstream: Message rejected as spam",
        "FAILED_PERM");
    assertThat(row.getJsonArray("recipients").getJsonObject(0).getString("enhancedCode")).isEqualTo("5.7.1");
  }

  @Test
  void downstreamReplyWithoutEnhancedCodeStillGivesTheClientOne() throws Exception {
    String reply = sendWhileTheDownstreamAnswers("550 no such thing");
    assertThat(reply).isEqualTo("550 5.0.0 Downstream: no such thing");
  }

  @Test
  void oneDownstreamConnectionServesSeveralTransactions() throws Exception {
    int before = gateway.downstream().connections();
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      for (int i = 0; i < 3; i++) {
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: " + i + "\r\n\r\nbody"))
            .startsWith("250 2.0.0");
      }
    }
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: again\r\n\r\nbody")).startsWith("250 2.0.0");
    }
    assertThat(gateway.downstream().connections() - before).isLessThanOrEqualTo(1);
  }

  /** One mail, whose data the downstream answers with {@code downstreamReply}; answers what the client heard. */
  private static String sendWhileTheDownstreamAnswers(String downstreamReply) throws Exception {
    dataReply = downstreamReply;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Subject: t\r\n\r\nbody");
    }
  }

  /**
   * The downstream refuses the data with {@code downstreamReply}: the client hears {@code heard}, and the latest row
   * and its recipient are {@code status} with the downstream's reply on record. Answers the row.
   */
  private static JsonObject refusedAtData(String downstreamReply, String heard, String status) throws Exception {
    assertThat(sendWhileTheDownstreamAnswers(downstreamReply)).isEqualTo(heard);
    JsonObject row = latestRow(status);
    assertThat(row.getString("downstreamReply")).isEqualTo(downstreamReply);
    assertThat(row.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo(status);
    return row;
  }

  private static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f-]{27})").matcher(reply);
    assertThat(m.find()).as("ledger id in %s", reply).isTrue();
    return m.group(1);
  }

  private static JsonObject detail(String id) throws Exception {
    var response = gateway.get("/api/v1/messages/" + id);
    assertThat(response.statusCode()).isEqualTo(200);
    return new JsonObject(response.body());
  }

  private static JsonObject latestRow(String status) throws Exception {
    var response = gateway.get("/api/v1/messages?status=" + status + "&limit=1");
    assertThat(response.statusCode()).isEqualTo(200);
    var items = new JsonObject(response.body()).getJsonArray("items");
    assertThat(items).hasSize(1);
    return detail(items.getJsonObject(0).getString("id"));
  }

  private static long count(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
