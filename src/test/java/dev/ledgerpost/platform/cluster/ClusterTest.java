package dev.ledgerpost.platform.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Haproxy;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three gateway JVMs on one PostgreSQL behind a real HAProxy with {@code send-proxy-v2} (docs/design.md §9).
 * The load client binds 127.0.0.2 and HAProxy connects from 127.0.0.3, so the PROXY address and the
 * peer's differ. Every test leaves the three nodes running.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterTest {
  static final String CLIENT = "127.0.0.2";
  static final String PROXY = "127.0.0.3";
  static final Duration HEARTBEAT = Duration.ofMillis(500);
  static final Duration STALE_PERIOD = Duration.ofSeconds(3);
  static final Duration WAIT = Duration.ofSeconds(60);
  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();
  static Cluster cluster;
  static Haproxy haproxy;

  @BeforeAll
  static void start() throws Exception {
    cluster = harness.closeAfter(Cluster.create(harness.downstream().port(), Map.of(
        "smtp", List.of("proxyProtocol: v2", "proxyNetworks: [\"" + PROXY + "/32\"]"),
        "node", List.of("heartbeatInterval: " + HEARTBEAT.toMillis() + "ms", "deadAfter: 3s"),
        "stale", List.of("threshold: " + STALE_PERIOD.toSeconds() + "s", "scanInterval: 500ms"),
        // stale.threshold must outlast a delivery (downstream.replyTimeout + dataTimeout); the scripted smarthost answers at once
        "downstream", List.of("replyTimeout: 1s", "dataTimeout: 1s"),
        "notify", List.of("pollInterval: 500ms"))));
    cluster.start("a", "b", "c");
    List<String> servers = new ArrayList<>();
    for (String id : List.of("a", "b", "c")) {
      servers.add("127.0.0.1:" + cluster.smtpPort(id));
    }
    haproxy = harness.closeAfter(Haproxy.start(List.of(
        new Haproxy.Route("smtp", servers, "send-proxy-v2 source " + PROXY))));
  }

  @Test
  @Order(1)
  void aSubscriberOnOneNodeSeesAnotherNodesMessagesInOrderAndResumesOnAThirdWithoutGapOrDuplicate() throws Exception {
    List<String> sent = new ArrayList<>();
    long lastSeen;
    Set<String> settled = new HashSet<>();
    try (WsTestClient onB = WsTestClient.connect(harness.vertx(), cluster.node("b").httpPort(), null, "child-token")) {
      assertThat(onB.next(WAIT).getString("type")).isEqualTo("hello");
      sent.addAll(sendDirect("a", 10, "first"));
      lastSeen = readUntilSettled(onB, -1, sent, settled);
    }
    sent.addAll(sendDirect("a", 10, "second")); // sent while nobody listens on b or c
    try (WsTestClient onC = WsTestClient.connect(harness.vertx(), cluster.node("c").httpPort(), "since=" + lastSeen, "child-token")) {
      readUntilSettled(onC, lastSeen, sent, settled);
    }
    assertThat(settled).containsExactlyInAnyOrderElementsOf(sent);
    assertThat(LedgerRows.count(cluster.ledgerUrl(), "SELECT count(*) FROM messages WHERE node_id = 'a'"))
        .isGreaterThanOrEqualTo(20);
  }

  @Test
  @Order(2)
  void sixHundredMessagesOverThirtySessionsWithANodeKilledMidRunAreEachDeliveredOnceAndRecorded() throws Exception {
    int sessions = 30;
    int perSession = 20;
    AtomicInteger answered = new AtomicInteger();
    CompletableFuture<Void> killed = new CompletableFuture<>();
    List<InvariantCheck.Heard> heard = Collections.synchronizedList(new ArrayList<>());
    ExecutorService threads = Executors.newFixedThreadPool(sessions);
    int before = harness.downstream().messages().size();
    try {
      List<CompletableFuture<Void>> clients = new ArrayList<>();
      for (int s = 0; s < sessions; s++) {
        int session = s;
        clients.add(CompletableFuture.runAsync(() -> {
          SmtpTestClient c = null;
          for (int i = 0; i < perSession; i++) {
            String messageId = "<cluster-" + session + "-" + i + "@load.test>";
            try {
              if (c == null) {
                c = new SmtpTestClient(haproxy.port("smtp"), CLIENT);
                if (!c.reply().startsWith("220")) {
                  throw new java.io.IOException("no greeting");
                }
              }
              String reply = c.sendMail("load@example.com", List.of("sink@example.net"),
                  "Message-ID: " + messageId + "\r\nSubject: cluster\r\n\r\nbody " + i + "\r\n");
              boolean accepted = reply.startsWith("250 ");
              heard.add(new InvariantCheck.Heard(messageId, accepted, accepted ? InvariantCheck.ledgerId(reply) : null,
                  reply.startsWith("451 4.3.0"), reply));
              if (answered.incrementAndGet() == 200) {
                killed.complete(null);
              }
            } catch (Exception | AssertionError lost) {
              // The node under this session died: the client heard nothing, so nothing is promised either way.
              heard.add(new InvariantCheck.Heard(messageId, false, null, false, "lost: " + lost));
              close(c);
              c = null;
            }
          }
          close(c);
        }, threads));
      }
      killed.get(120, TimeUnit.SECONDS);
      cluster.kill("b");
      cluster.launch("b").awaitReady(Cluster.START); // same journal, same port: HAProxy finds it again
      CompletableFuture.allOf(clients.toArray(new CompletableFuture<?>[0])).get(300, TimeUnit.SECONDS);
    } finally {
      threads.shutdownNow();
    }
    assertThat(heard).hasSize(sessions * perSession);
    // An accepted message whose settle the dead node journaled is settled by the restarted node.
    Poll.until(WAIT, "every accepted message settled", () -> {
      for (InvariantCheck.Heard h : heard) {
        if (h.accepted() && "PENDING".equals(LedgerRows.string(cluster.ledgerUrl(),
            "SELECT status FROM messages WHERE id = '" + h.ledgerId() + "'"))) {
          return false;
        }
      }
      return true;
    });
    List<ScriptedSmtpServer.Received> copies = harness.downstream().messages().subList(before, harness.downstream().messages().size());
    InvariantCheck.Result result = InvariantCheck.check(cluster.ledgerUrl(), copies, heard);
    System.out.println("cluster run: " + result);
    assertThat(result.violations()).isEmpty();
    assertThat(result.accepted()).isGreaterThan(sessions * perSession / 2);
    for (ScriptedSmtpServer.Received copy : copies) {
      String trace = copy.text().substring(0, copy.text().indexOf(';'));
      assertThat(trace).as("the Received: line names the PROXY header's client").contains("([" + CLIENT + "])")
          .doesNotContain(PROXY);
    }
    assertThat(LedgerRows.count(cluster.ledgerUrl(), "SELECT count(DISTINCT node_id) FROM messages "
        + "WHERE message_id_header LIKE '<cluster-%'")).as("nodes that opened rows").isEqualTo(3);
  }

  @Test
  @Order(3)
  void whenTheStaleWatchLeaderIsKilledAnotherNodeRaisesOncePerPeriodForTheWholeCluster() throws Exception {
    String url = cluster.ledgerUrl();
    UUID first = UUID.randomUUID();
    LedgerRows.insert(url, first, "PENDING", "PENDING", Instant.now().minus(Duration.ofHours(1)), "<stale-1@example.com>");
    Poll.until(WAIT, "the first stale row raised", () -> raises(first) >= 1);
    String leader = cluster.leaderOf(Job.STALE_WATCH.key);
    assertThat(leader).isIn("a", "b", "c");

    long watchedFrom = System.nanoTime();
    int raisesAtStart = raises(first);
    cluster.kill(leader);
    // The dead holder's session ends with its process: another node holds the lock within 2 heartbeats.
    long killedAt = System.nanoTime();
    Poll.until(Duration.ofSeconds(30), "another node leads the stale watch", () -> {
      String now = cluster.leaderOf(Job.STALE_WATCH.key);
      return now != null && !now.equals(leader);
    });
    Duration takeover = Duration.ofNanos(System.nanoTime() - killedAt);
    System.out.println("stale watch taken over in " + takeover.toMillis() + " ms");
    assertThat(takeover).isLessThan(HEARTBEAT.multipliedBy(2).plusSeconds(1)); // polling adds its own delay

    UUID second = UUID.randomUUID();
    LedgerRows.insert(url, second, "PENDING", "PENDING", Instant.now().minus(Duration.ofHours(1)), "<stale-2@example.com>");
    long inserted = System.nanoTime();
    Poll.until(Duration.ofSeconds(30), "the next stale row raised by the new leader", () -> raises(second) >= 1);
    System.out.println("next stale row raised " + (System.nanoTime() - inserted) / 1_000_000 + " ms after it appeared");

    // Two more periods with two live nodes scanning every 500 ms: still one raise per period, not one per node.
    Poll.until(Duration.ofSeconds(30), "two periods watched", () ->
        System.nanoTime() - watchedFrom > STALE_PERIOD.multipliedBy(2).toNanos());
    long periods = (System.nanoTime() - watchedFrom) / STALE_PERIOD.toNanos() + 1;
    assertThat(raises(first) - raisesAtStart).as("raises of one row in %d periods", periods).isBetween(1, (int) periods);

    cluster.launch(leader).awaitReady(Cluster.START);
  }

  @Test
  @Order(4)
  void aSecondGatewayWithALiveNodesIdIsRefusedWithOneLineNamingIt() throws Exception {
    ChildGateway twin = cluster.launchTwin("a", "a-twin");
    assertThat(twin.awaitExit(Cluster.START)).isNotZero();
    List<String> refusal = twin.log("node.id a: another live gateway on this ledger uses this node id");
    assertThat(refusal).hasSize(1);
    assertThat(refusal.get(0)).contains("PID " + cluster.node("a").pid());
    assertThat(twin.lines()).noneMatch(l -> l.contains("Exception") || l.startsWith("\tat "));
  }

  private int raises(UUID id) throws Exception {
    String n = LedgerRows.string(cluster.ledgerUrl(), "SELECT raises FROM stale_raises WHERE message_id = '" + id + "'");
    return n == null ? 0 : Integer.parseInt(n);
  }

  /** Sends n messages straight to one node's SMTP port (not through HAProxy); returns the ledger ids. */
  private static List<String> sendDirect(String node, int n, String tag) throws Exception {
    List<String> ids = new ArrayList<>();
    try (SmtpTestClient c = new SmtpTestClient(cluster.smtpPort(node))) {
      c.reply();
      for (int i = 0; i < n; i++) {
        String reply = c.sendMail("ws@example.com", List.of("sink@example.net"),
            "Message-ID: <" + tag + "-" + i + "@ws.test>\r\nSubject: ws\r\n\r\nbody\r\n");
        assertThat(reply).startsWith("250 ");
        ids.add(InvariantCheck.ledgerId(reply));
      }
    }
    return ids;
  }

  /**
   * Reads events until every message in {@code sent} has its settled event; each event's seq must follow the
   * previous one by exactly one (the admin token sees every event). Returns the last seq read.
   */
  private static long readUntilSettled(WsTestClient ws, long after, List<String> sent, Set<String> settled)
      throws Exception {
    long last = after;
    while (!settled.containsAll(sent)) {
      JsonObject e = ws.nextEvent(WAIT);
      long seq = e.getLong("seq");
      if (last >= 0) {
        assertThat(seq).as("the event after %d", last).isEqualTo(last + 1);
      }
      last = seq;
      if ("message.settled".equals(e.getString("event"))) {
        assertThat(settled.add(e.getString("messageId"))).as("settled once: %s", e).isTrue();
      }
    }
    return last;
  }

  private static void close(SmtpTestClient c) {
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // the node is gone already
      }
    }
  }
}
