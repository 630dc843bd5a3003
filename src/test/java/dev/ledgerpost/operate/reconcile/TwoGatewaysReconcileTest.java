package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.cluster.NodePart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.operate.reconcile.ReconcileMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Confidence;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Propose;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Proposed;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two gateways on one ledger, both reading the same smarthost log with {@code reconcile.autoResolve: exact}: one node
 * leads the reconcile job at a time, and every row is reconciled once, by one proposal and one resolution; when the
 * leader stops, the other takes the job over. Even two proposals written at once for one row leave one.
 */
class TwoGatewaysReconcileTest {
  Vertx vertxA;
  Vertx vertxB;
  GatewayHarness a;
  GatewayHarness b;
  String url;
  MaillogWriter maillog;

  @BeforeEach
  void start() throws Exception {
    vertxA = Vertx.vertx();
    vertxB = Vertx.vertx(); // a bus of its own: two gateways in one Vert.x would share their addresses
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertxA));
    Path log = GatewayHarness.tempDir("maillog-two-").resolve("maillog");
    maillog = new MaillogWriter(log);
    url = TestDatabase.newDatabase();
    a = GatewayHarness.start(vertxA, options(downstream.port(), log, "a"));
    b = GatewayHarness.start(vertxB, options(downstream.port(), log, "b"));
  }

  private Map<String, Object> options(int downstream, Path log, String node) {
    Map<String, Object> o = GatewayHarness.defaults(downstream);
    o.put("ledger.url", url);
    o.put("node.id", node);
    o.put("node.heartbeatInterval", "200ms");
    o.put("node.deadAfter", "1s");
    o.put("reconcile.interval", "100ms");
    o.put("reconcile.autoResolve", "exact");
    o.put("reconcile.sources", List.of(Map.of("type", "postfix-log", "name", "mx", "path", log.toString(), "zone", "UTC")));
    return o;
  }

  @AfterEach
  void stop() throws Exception {
    for (GatewayHarness g : new GatewayHarness[] {a, b}) {
      if (g != null) {
        g.close();
      }
    }
    GatewayHarness.await(vertxA.close());
    GatewayHarness.await(vertxB.close());
  }

  private List<UUID> unknownRows(String prefix, int n) throws Exception {
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      UUID id = UUID.randomUUID();
      Instant received = Instant.now().minusSeconds(2);
      String messageId = "<" + prefix + "-" + i + "@example.com>";
      LedgerRows.insert(url, id, "UNKNOWN", "UNKNOWN", received, messageId);
      maillog.queued(String.format("%s%08X", prefix.toUpperCase().substring(0, 2), i), messageId, "a@example.com", "b@example.net",
          received.plusSeconds(1));
      ids.add(id);
    }
    return ids;
  }

  private GatewayHarness leader() throws Exception {
    Poll.until(Duration.ofSeconds(15), "one node to lead the reconcile job",
        () -> a.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE) || b.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE));
    assertThat(a.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE) && b.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE))
        .as("both lead").isFalse();
    return a.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE) ? a : b;
  }

  private void awaitResolved(List<UUID> ids) throws Exception {
    String in = String.join("', '", ids.stream().map(UUID::toString).toList());
    Poll.until(Duration.ofSeconds(60), ids.size() + " rows resolved", () -> LedgerRows.count(url,
        "SELECT count(*) FROM messages WHERE status = 'RESOLVED_DELIVERED' AND id IN ('" + in + "')") == ids.size());
  }

  @Test
  void eachRowIsReconciledOnceAndTheOtherNodeTakesOverWhenTheLeaderStops() throws Exception {
    GatewayHarness leader = leader();
    GatewayHarness other = leader == a ? b : a;
    List<UUID> first = unknownRows("aa", 20);
    awaitResolved(first);
    String in = String.join("', '", first.stream().map(UUID::toString).toList());
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE message_id IN ('" + in + "')")).isEqualTo(20);
    assertThat(LedgerRows.count(url, "SELECT count(DISTINCT message_id) FROM reconcile_proposals WHERE state = 'ACCEPTED' "
        + "AND message_id IN ('" + in + "')")).isEqualTo(20);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resolutions WHERE operator = 'reconcile:mx' AND message_id IN ('" + in
        + "')")).isEqualTo(20);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE proposed_by <> '"
        + leader.gateway().nodeId() + "'")).as("proposals by the node that does not lead").isZero();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.resolved' AND message_id IN ('" + in
        + "')")).isEqualTo(20);

    // The leader stops (its session, and with it the job's lock, goes): the other takes the job over.
    leader.close();
    if (leader == a) {
      a = null;
    } else {
      b = null;
    }
    Poll.until(Duration.ofSeconds(15), "the other node to lead", () -> other.gateway().part(NodePart.class).leadership().leads(Job.RECONCILE));
    List<UUID> second = unknownRows("bb", 10);
    awaitResolved(second);
    String in2 = String.join("', '", second.stream().map(UUID::toString).toList());
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE message_id IN ('" + in2 + "') AND proposed_by = '"
        + other.gateway().nodeId() + "'")).isEqualTo(10);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals")).isEqualTo(30);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resolutions")).isEqualTo(30);
  }

  @Test
  void twoProposalsWrittenAtOnceForOneRowLeaveOne() throws Exception {
    // Not through the job (one node leads it): straight to each node's ledger part, at the same time.
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url, id, "UNKNOWN", "UNKNOWN", Instant.now().minusSeconds(1), "<race@example.com>");
    Map<String, Future<Proposed>> both = new HashMap<>();
    for (int i = 0; i < 2; i++) {
      Vertx v = i == 0 ? vertxA : vertxB;
      Propose p = new Propose(id, 1, ResolutionOutcome.DELIVERED, Confidence.WEAK, "race", "REF-" + i,
          new JsonObject().put("row", new JsonObject().put("messageId", "<race@example.com>")), "test-" + i);
      both.put("node" + i, Bus.of(v).request(ReconcileMessages.PROPOSE, p, Proposed.class));
    }
    int written = 0;
    for (Future<Proposed> f : both.values()) {
      if (GatewayHarness.await(f).proposal() != null) {
        written++;
      }
    }
    assertThat(written).isEqualTo(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE message_id = '" + id + "'")).isEqualTo(1);
  }
}
