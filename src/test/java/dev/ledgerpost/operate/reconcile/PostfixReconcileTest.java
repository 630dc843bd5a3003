package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 18 against a real Postfix as the smarthost (docs/design.md §8.4): a TCP proxy between the gateway and Postfix
 * drops Postfix's reply to each final dot, so the gateway records UNKNOWN; the reconcile job reads Postfix's own log
 * (its maillog_file) and, with {@code reconcile.autoResolve: exact}, resolves each message through the resolution path,
 * with Postfix's queue id and log lines as the evidence. Postfix relays what it accepts to a next hop, which counts them:
 * nothing is sent twice.
 */
class PostfixReconcileTest {
  static PostfixInstance postfix;
  static TcpProxy proxy;
  static final Map<String, String> replies = new java.util.concurrent.ConcurrentHashMap<>();

  /** The gateway relays to Postfix through the proxy; Postfix relays to the harness's smarthost, the next hop. */
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("downstream.replyTimeout", "2s")
      .with("downstream.dataTimeout", "2s")
      .with("reconcile.pendingAge", "5s")
      .with("reconcile.interval", "300ms")
      .with("reconcile.autoResolve", "exact")
      .with("stale.threshold", "5s")
      .with("stale.scanInterval", "200ms")
      .configure((g, o) -> {
        // The header check is read by Postfix's cleanup, which runs as postfix: its directory must be open to it.
        java.nio.file.Path checks = GatewayHarness.tempDir("postfix-checks-");
        java.nio.file.Files.setPosixFilePermissions(checks, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        java.nio.file.Files.writeString(checks.resolve("header_checks"), "/^Subject: REJECTME/ REJECT message content rejected\n");
        postfix = g.closeAfter(PostfixInstance.start("smarthost", Map.of(
            "relayhost", "[127.0.0.1]:" + g.downstream().port(),
            "smtpd_relay_restrictions", "permit_mynetworks, reject",
            "header_checks", "regexp:" + checks.resolve("header_checks")), true));
        proxy = g.closeAfter(TcpProxy.to("127.0.0.1", postfix.port()));
        proxy.dropRepliesToFinalDot();
        o.put("downstream.port", proxy.port());
        o.put("reconcile.sources", List.of(Map.of("type", "postfix-log", "name", "postfix", "path", maillog().toString())));
      })
      .afterStart(g -> {
        // Sent once each; each reply to the final dot is dropped by the proxy.
        send("<acc-1@example.com>", List.of("b@example.net"), "hello");
        send("<acc-2@example.com>", List.of("c@example.net", "d@example.net"), "hello both");
        send("<rej-1@example.com>", List.of("b@example.net"), "REJECTME please");
        // Two Message-ID headers: Postfix logs both, the ledger keeps the first.
        send("<two-1@example.com>\r\nMessage-ID: <two-1-second@example.com>", List.of("b@example.net"), "two ids");
      });

  private static void send(String messageId, List<String> to, String subject) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      replies.put(messageId, c.sendMail("a@example.com", to, "Message-ID: " + messageId + "\r\nSubject: " + subject
          + "\r\nFrom: a@example.com\r\n\r\nBody of " + messageId + "\r\n"));
    }
  }

  @Test
  void aMessageWhoseReplyWasLostIsResolvedDeliveredWithPostfixsQueueIdAndLogLines() throws Exception {
    assertThat(replies.get("<acc-1@example.com>")).startsWith("451 4.4.2");
    String id = idOf("<acc-1@example.com>");
    JsonObject detail = awaitStatus(id, "RESOLVED_DELIVERED");

    String queueId = queueIdOf("<acc-1@example.com>");
    JsonObject resolution = detail.getJsonObject("resolution");
    assertThat(resolution.getString("operator")).isEqualTo("reconcile:postfix");
    JsonObject proposal = resolution.getJsonObject("proposal");
    assertThat(resolution.getString("note")).startsWith("reconcile proposal " + proposal.getLong("id") + ": DELIVERED (exact) from postfix")
        .contains(queueId);
    assertThat(proposal.getString("confidence")).isEqualTo("exact");
    assertThat(proposal.getString("state")).isEqualTo("ACCEPTED");
    assertThat(proposal.getString("source")).isEqualTo("postfix");
    assertThat(proposal.getString("evidenceRef")).isEqualTo(queueId);
    JsonObject evidence = proposal.getJsonObject("evidence");
    assertThat(evidence.getString("verdict")).isEqualTo("ACCEPTED");
    assertThat(evidence.getJsonArray("matched").getList()).contains("message-id", "sender", "recipients", "time");
    List<String> lines = strings(evidence.getJsonArray("lines"));
    assertThat(lines).anyMatch(l -> l.contains("postfix/cleanup") && l.contains(queueId + ": message-id=<acc-1@example.com>"));
    assertThat(lines).anyMatch(l -> l.contains("postfix/qmgr") && l.contains(queueId + ": from=<a@example.com>"));
    assertThat(evidence.getJsonObject("row").getString("status")).isEqualTo("UNKNOWN");
    // The operation status shows the same evidence with the resolution.
    JsonObject operation = new JsonObject(gateway.get("/api/v1/operations/" + id).body());
    assertThat(operation.getJsonObject("message").getJsonObject("resolution").getJsonObject("proposal").getString("evidenceRef"))
        .isEqualTo(queueId);
    // The resolution is the one an operator's would be: the resolutions row names the proposal; the recipients moved too.
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT proposal_id FROM resolutions WHERE message_id = '" + id + "'"))
        .isEqualTo(String.valueOf(proposal.getLong("id")));
    assertThat(detail.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo("RESOLVED_DELIVERED");
    assertThat(detail.getInteger("version")).isEqualTo(3);
  }

  @Test
  void aMessageWithTwoMessageIdHeadersIsMatchedByTheFirstThatTheLedgerKept() throws Exception {
    String id = idOf("<two-1@example.com>");
    assertThat(logLines(": message-id=<two-1")).as("Postfix logs both headers").hasSize(2);
    JsonObject detail = awaitStatus(id, "RESOLVED_DELIVERED");
    JsonObject proposal = detail.getJsonObject("resolution").getJsonObject("proposal");
    assertThat(proposal.getString("confidence")).isEqualTo("exact");
    assertThat(proposal.getString("evidenceRef")).isEqualTo(queueIdOf("<two-1@example.com>"));
    assertThat(proposal.getJsonObject("evidence").getJsonArray("messageIds").getList())
        .containsExactly("<two-1@example.com>", "<two-1-second@example.com>");
  }

  @Test
  void twoRecipientsAreTheEnvelopeToo() throws Exception {
    String id = idOf("<acc-2@example.com>");
    JsonObject detail = awaitStatus(id, "RESOLVED_DELIVERED");
    JsonObject proposal = detail.getJsonObject("resolution").getJsonObject("proposal");
    assertThat(proposal.getString("confidence")).isEqualTo("exact");
    assertThat(proposal.getString("evidenceRef")).isEqualTo(queueIdOf("<acc-2@example.com>"));
    assertThat(detail.getJsonArray("recipients")).hasSize(2);
  }

  @Test
  void aMessagePostfixRejectedAfterTheDotIsResolvedNotDeliveredWithTheRejectLine() throws Exception {
    assertThat(replies.get("<rej-1@example.com>")).startsWith("451 4.4.2");
    String id = idOf("<rej-1@example.com>");
    JsonObject detail = awaitStatus(id, "RESOLVED_NOT_DELIVERED");
    JsonObject proposal = detail.getJsonObject("resolution").getJsonObject("proposal");
    assertThat(proposal.getString("outcome")).isEqualTo("NOT_DELIVERED");
    assertThat(proposal.getString("confidence")).isEqualTo("exact");
    assertThat(proposal.getString("evidenceRef")).isEqualTo(queueIdOf("<rej-1@example.com>"));
    JsonObject evidence = proposal.getJsonObject("evidence");
    assertThat(evidence.getString("verdict")).isEqualTo("REJECTED");
    assertThat(evidence.getString("summary")).contains("REJECTME").contains("5.7.1 message content rejected");
    assertThat(strings(evidence.getJsonArray("lines"))).anyMatch(l -> l.contains("postfix/cleanup") && l.contains(": reject: header Subject: REJECTME"));
    assertThat(detail.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo("RESOLVED_NOT_DELIVERED");
  }

  @Test
  void withoutEvidenceThereIsNoProposalAndTheStaleWatchStillRaisesTheRow() throws Exception {
    UUID pending = UUID.randomUUID();
    UUID unknown = UUID.randomUUID();
    Instant minuteAgo = Instant.now().minusSeconds(60);
    LedgerRows.insert(gateway.databaseUrl(), pending, "PENDING", "PENDING", minuteAgo, "<never-seen-1@example.com>");
    LedgerRows.insert(gateway.databaseUrl(), unknown, "UNKNOWN", "UNKNOWN", minuteAgo, "<never-seen-2@example.com>");
    long before = gateway.gateway().part(ReconcilePart.class).verticle().passes();
    Poll.until(Duration.ofSeconds(30), "five reconcile passes after the rows were written",
        () -> gateway.gateway().part(ReconcilePart.class).verticle().passes() >= before + 5);
    Poll.until(Duration.ofSeconds(30), "the stale watch to raise the PENDING row", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM stale_raises WHERE message_id = '" + pending + "'") == 1);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM reconcile_proposals WHERE message_id IN ('"
        + pending + "', '" + unknown + "')")).isZero();
    assertThat(LedgerRows.status(gateway.databaseUrl(), pending)).isEqualTo("PENDING");
    assertThat(LedgerRows.status(gateway.databaseUrl(), unknown)).isEqualTo("UNKNOWN");
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM outbox WHERE type = 'message.stale' AND message_id = '"
        + pending + "'")).isGreaterThanOrEqualTo(1);
    // The gauge of rows still unknown after reconciliation counts them.
    Poll.until(Duration.ofSeconds(10), "ledgerpost_reconcile_unresolved_messages to count the two rows",
        () -> gateway.get("/metrics", null).body().contains("ledgerpost_reconcile_unresolved_messages 2.0"));
  }

  @Test
  void nothingIsSentTwice() throws Exception {
    List<String> sent = List.of("<acc-1@example.com>", "<acc-2@example.com>", "<rej-1@example.com>", "<two-1@example.com>");
    for (String m : sent) {
      awaitStatus(idOf(m), m.startsWith("<rej") ? "RESOLVED_NOT_DELIVERED" : "RESOLVED_DELIVERED");
    }
    long before = gateway.gateway().part(ReconcilePart.class).verticle().passes();
    Poll.until(Duration.ofSeconds(30), "three more reconcile passes", () -> gateway.gateway().part(ReconcilePart.class).verticle().passes() >= before + 3);
    assertThat(proxy.repliesDropped()).isEqualTo(4);
    for (String m : sent) {
      assertThat(logLines("message-id=" + m)).as("Postfix received %s once", m).hasSize(1);
      assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE message_id_header = '" + m + "'"))
          .isEqualTo(1);
      assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM reconcile_proposals p JOIN messages m "
          + "ON m.id = p.message_id WHERE m.message_id_header = '" + m + "'")).as("one proposal for %s", m).isEqualTo(1);
    }
    Poll.until(Duration.ofSeconds(60), "Postfix to relay the three accepted messages to the next hop", () -> gateway.downstream().messages().size() >= 3);
    assertThat(gateway.downstream().messages()).extracting(r -> r.text().contains("Message-ID: <acc-1@example.com>")).containsOnlyOnce(true);
    assertThat(gateway.downstream().messages()).extracting(r -> r.text().contains("Message-ID: <acc-2@example.com>")).containsOnlyOnce(true);
    assertThat(gateway.downstream().messages()).noneMatch(r -> r.text().contains("<rej-1@example.com>"));
    assertThat(gateway.get("/metrics", null).body()).contains(
        "ledgerpost_reconcile_proposals_total{confidence=\"exact\",outcome=\"delivered\"} 3.0",
        "ledgerpost_reconcile_proposals_total{confidence=\"exact\",outcome=\"not_delivered\"} 1.0");
  }

  /** Postfix's own log file (its maillog_file). */
  private static java.nio.file.Path maillog() {
    return postfix.dir().resolve("maillog");
  }

  /** The lines of Postfix's log that contain {@code text}. */
  private static List<String> logLines(String text) {
    return postfix.log().lines().filter(l -> l.contains(text)).toList();
  }

  private static String idOf(String messageId) throws Exception {
    String id = LedgerRows.string(gateway.databaseUrl(), "SELECT id FROM messages WHERE message_id_header = '" + messageId + "'");
    assertThat(id).as("the ledger row of %s", messageId).isNotNull();
    return id;
  }

  /** The queue id Postfix's cleanup logged with this Message-ID. */
  private static String queueIdOf(String messageId) throws Exception {
    List<String> lines = logLines("message-id=" + messageId);
    assertThat(lines).hasSize(1);
    String line = lines.get(0);
    String before = line.substring(0, line.indexOf(": message-id="));
    return before.substring(before.lastIndexOf(' ') + 1);
  }

  private static JsonObject awaitStatus(String id, String status) throws Exception {
    JsonObject[] seen = new JsonObject[1];
    Poll.until(Duration.ofSeconds(30), id + " to become " + status, () -> {
      seen[0] = new JsonObject(gateway.get("/api/v1/messages/" + id).body());
      return status.equals(seen[0].getString("status"));
    });
    return seen[0];
  }

  private static List<String> strings(JsonArray a) {
    return a.stream().map(String::valueOf).toList();
  }
}
