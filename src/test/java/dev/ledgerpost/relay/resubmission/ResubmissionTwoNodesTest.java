package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 28's race across two gateway nodes on one PostgreSQL, both relaying to one smarthost: a client retrying on
 * another node of the cluster while its first session still runs (a load balancer spreads its connections). Each node
 * has its own ledger writer, pool and node id, so their opens are separate statements on separate connections that
 * claim the fingerprint at the same moment: the database's claim row decides, and the message is relayed once. The
 * nodes are in-process gateways, each on a Vert.x of its own (as two processes would be): what decides is the database.
 */
class ResubmissionTwoNodesTest {
  static final List<String> TO = List.of("b@example.net");

  /** Node a, with the smarthost both nodes relay to. */
  @RegisterExtension
  static final GatewayHarness a = GatewayHarness.extension().with("node.id", "a");
  static Vertx vertxB;
  static GatewayHarness b;

  @BeforeAll
  static void startNodeB() throws Exception {
    Map<String, Object> config = GatewayHarness.defaults(a.downstream().port());
    config.put("ledger.url", a.databaseUrl());
    config.put("node.id", "b");
    vertxB = Vertx.vertx(); // a bus of its own: two gateways on one bus would answer each other's addresses
    b = GatewayHarness.start(vertxB, config);
  }

  @AfterAll
  static void stopNodeB() throws Exception {
    try {
      if (b != null) {
        b.close();
      }
    } finally {
      GatewayHarness.await(vertxB.close());
    }
  }

  @Test
  void oneSessionOnEachNodeEndingOneMessageAtOnceRelayItOnce() throws Exception {
    race(List.of(a.smtpPort(), b.smtpPort()), 25);
  }

  @Test
  void fourSessionsOnEachNodeEndingOneMessageAtOnceRelayItOnce() throws Exception {
    race(List.of(a.smtpPort(), b.smtpPort(), a.smtpPort(), b.smtpPort(), a.smtpPort(), b.smtpPort(), a.smtpPort(),
        b.smtpPort()), 10);
  }

  private void race(List<Integer> ports, int rounds) throws Exception {
    List<String> openedOn = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      String messageId = "<nodes-" + ports.size() + "-" + round + "." + UUID.randomUUID() + "@example.com>";
      List<String> replies = SameMessageRace.replies(ports, "a@example.com", TO, SameMessageRace.message(messageId));
      SameMessageRace.Result r = SameMessageRace.assertOneCopy(replies, messageId, a.databaseUrl(), a.downstream(), null);
      openedOn.add(LedgerRows.string(a.databaseUrl(), "SELECT node_id FROM messages WHERE id = '" + r.winner() + "'"));
    }
    // Not asserted (it is the race): which node's open won, round by round.
    System.out.printf("%d sessions on two nodes x %d rounds: rows opened on a %d, on b %d%n", ports.size(), rounds,
        openedOn.stream().filter("a"::equals).count(), openedOn.stream().filter("b"::equals).count());
    assertThat(openedOn).as("each round's row was opened by one of the nodes").isSubsetOf("a", "b");
  }
}
