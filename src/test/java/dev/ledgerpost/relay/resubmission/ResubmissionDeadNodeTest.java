package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A retry of a row that is still PENDING on a node that is gone (docs/contract.md §1.13): no live node holds it, so nobody
 * knows whether its copy reached the smarthost, and the retry is answered as smtp.resubmission.unknown says: held
 * (451 4.4.2, nothing sent) or relayed as new mail. The fault is real: node "lost" reaches PostgreSQL through a proxy
 * that goes silent (a pulled cable: no byte either way, nothing closed) while the smarthost holds its reply to the
 * message's final dot. Its heartbeat stops; once that is older than node.deadAfter, the node is dead to the survivor,
 * whatever its last heartbeat said it was delivering.
 */
class ResubmissionDeadNodeTest {
  static final Duration DEAD_AFTER = Duration.ofSeconds(2);
  static final Duration WAIT = Duration.ofSeconds(30);
  static final Pattern QUEUED = Pattern.compile("^250 2\\.0\\.0 Ok: queued as ([0-9a-f-]{36}) ");
  static final List<String> TO = List.of("b@example.net");

  final String messageId = "<dead-node." + UUID.randomUUID() + "@example.com>";
  final String message = SameMessageRace.message(messageId);
  /** The smarthost's reply to the lost node's copy (the first final dot it sees), held until the test gives it. */
  final Promise<String> replyToTheLostCopy = Promise.promise();

  /** The survivor: its gateway is started by each test, with the smtp.resubmission.unknown it is about. */
  @RegisterExtension
  final GatewayHarness survivor = GatewayHarness.extension().manual()
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received m, int n) {
          return n == 1 ? replyToTheLostCopy.future() : Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n);
        }
      });

  TcpProxy cable;
  Vertx lostVertx;
  GatewayHarness lost;
  /** The first submission's session, on the lost node: its reply waits for the smarthost's. */
  CompletableFuture<String> firstSession;

  @AfterEach
  void stopTheLostNode() throws Exception {
    replyToTheLostCopy.tryComplete("250 2.0.0 Ok: queued as DS1");
    try {
      if (cable != null) {
        cable.heal(); // its delivery can end, and it can stop
      }
      if (lost != null) {
        lost.close();
      }
    } finally {
      if (lostVertx != null) {
        GatewayHarness.await(lostVertx.close());
      }
      if (cable != null) {
        cable.close();
      }
    }
  }

  @Test
  void aRetryOfARowPendingOnADeadNodeIsHeldAndNothingIsSent() throws Exception {
    UUID pending = pendingOnANodeThatDies("hold");

    assertThat(send(survivor.smtpPort()))
        .startsWith("451 4.4.2 Outcome of previous submission " + pending + " not yet known");
    assertThat(copiesAtTheSmarthost()).as("nothing was sent for the retry").isEqualTo(1);
    assertThat(rowsOfTheMessage()).isEqualTo(pending.toString());
    assertThat(LedgerRows.string(url(), "SELECT outcome || '|' || node_id FROM resubmissions WHERE message_id = '" + pending
        + "'")).isEqualTo("held|survivor");

    // The cable is back and the smarthost answers the lost node's copy: the row is SENT, and a retry now hears so.
    cable.heal();
    replyToTheLostCopy.complete("250 2.0.0 Ok: queued as DS1");
    assertThat(firstSession.get(WAIT.toSeconds(), TimeUnit.SECONDS)).startsWith("250 2.0.0 Ok: queued as " + pending);
    Poll.until(WAIT, "the lost node's row settled SENT", () -> "SENT".equals(LedgerRows.status(url(), pending)));
    assertThat(send(survivor.smtpPort())).startsWith("250 2.0.0 Ok: already relayed as " + pending);
    assertThat(copiesAtTheSmarthost()).isEqualTo(1);
  }

  /** smtp.resubmission.unknown: relay prefers a possible duplicate to a delay: the retry takes the row's claim over. */
  @Test
  void withUnknownRelayARetryOfARowPendingOnADeadNodeIsRelayedAsNewMail() throws Exception {
    UUID pending = pendingOnANodeThatDies("relay");

    String retry = send(survivor.smtpPort());
    Matcher m = QUEUED.matcher(retry);
    assertThat(m.find()).as(retry).isTrue();
    UUID relayed = UUID.fromString(m.group(1));
    assertThat(copiesAtTheSmarthost()).isEqualTo(2);
    assertThat(LedgerRows.string(url(), "SELECT resubmission_of FROM messages WHERE id = '" + relayed + "'"))
        .isEqualTo(pending.toString());
    assertThat(LedgerRows.string(url(), "SELECT string_agg(message_id::text, ',') FROM resubmission_claims"))
        .as("the claim moved to the relayed row").isEqualTo(relayed.toString());
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM resubmissions")).as("a relayed retry is new mail, no record")
        .isZero();
  }

  /**
   * Starts the survivor (with smtp.resubmission.unknown {@code unknown}) and the lost node on one ledger, has the lost
   * node relay the message while the smarthost holds its reply, then pulls the lost node's cable and waits until its
   * heartbeat is older than the survivor's node.deadAfter. Answers the lost node's PENDING row.
   */
  private UUID pendingOnANodeThatDies(String unknown) throws Exception {
    Map<String, Object> config = nodeConfig("survivor");
    config.put("smtp.resubmission.unknown", unknown);
    survivor.begin(config);

    TestDatabase.Server server = TestDatabase.server();
    cable = TcpProxy.to(server.host(), server.port());
    String direct = url();
    Map<String, Object> lostConfig = nodeConfig("lost");
    lostConfig.put("ledger.url", direct.substring(0, direct.indexOf('@') + 1) + "127.0.0.1:" + cable.port()
        + direct.substring(direct.lastIndexOf('/')));
    lostVertx = Vertx.vertx(); // a bus of its own, as another process has
    lost = GatewayHarness.start(lostVertx, lostConfig);

    int lostPort = lost.smtpPort();
    firstSession = CompletableFuture.supplyAsync(() -> {
      try {
        return send(lostPort);
      } catch (IOException e) {
        return "session ended: " + e;
      }
    });
    Poll.until(WAIT, "the lost node's copy at the smarthost", () -> copiesAtTheSmarthost() == 1);
    UUID pending = UUID.fromString(rowsOfTheMessage());
    assertThat(LedgerRows.string(url(), "SELECT status || '|' || node_id FROM messages WHERE id = '" + pending + "'"))
        .isEqualTo("PENDING|lost");

    cable.freeze();
    Poll.until(WAIT, "the lost node's heartbeat older than node.deadAfter", () -> "t".equals(LedgerRows.string(url(),
        "SELECT heartbeat_at <= now() - interval '" + DEAD_AFTER.toMillis() + " milliseconds' FROM nodes WHERE id = 'lost'")));
    return pending;
  }

  private Map<String, Object> nodeConfig(String nodeId) {
    Map<String, Object> config = GatewayHarness.defaults(survivor.downstream().port());
    config.put("node.id", nodeId);
    config.put("node.heartbeatInterval", "250ms");
    config.put("node.deadAfter", DEAD_AFTER.toMillis() + "ms");
    return config;
  }

  private String send(int port) throws IOException {
    try (SmtpTestClient c = new SmtpTestClient(port, "127.0.0.1")) {
      c.reply();
      return c.sendMail("a@example.com", TO, message);
    }
  }

  private long copiesAtTheSmarthost() {
    return survivor.downstream().messages().stream().filter(m -> m.text().contains("Message-ID: " + messageId + "\r\n"))
        .count();
  }

  private String rowsOfTheMessage() throws Exception {
    return LedgerRows.string(url(), "SELECT string_agg(id::text, ',') FROM messages WHERE message_id_header = '"
        + messageId + "'");
  }

  private String url() {
    return survivor.databaseUrl();
  }
}
