package dev.ledgerpost.platform.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.RunsAlone;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A leader that is frozen, not dead (issue 26, item 9): SIGSTOP on the node that leads every single-active job. Its
 * kernel still answers TCP keepalives and PostgreSQL keeps its session and locks, so only its heartbeat tells the
 * others; node b must take every job within {@code node.deadAfter} (plus a heartbeat and the poll's own delay),
 * publish again, and node a, woken by SIGCONT, must not act as a leader for a moment (docs/design.md §9.2).
 */
@RunsAlone
class FrozenLeaderTest {
  static final Duration HEARTBEAT = Duration.ofMillis(500);
  static final Duration DEAD_AFTER = Duration.ofSeconds(3);
  /** A heartbeat for b to notice, and a 2-core machine shared by several test JVMs. */
  static final Duration MARGIN = HEARTBEAT.plusSeconds(3);

  @Test
  void aFrozenLeadersJobsMoveWithinDeadAfterAndTheWokenNodeStepsDown() throws Exception {
    Vertx vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    Cluster cluster = Cluster.create(downstream.port(), Map.of(
        "node", List.of("heartbeatInterval: " + HEARTBEAT.toMillis() + "ms", "deadAfter: " + DEAD_AFTER.toSeconds() + "s"),
        "notify", List.of("pollInterval: 500ms")));
    try {
      cluster.start("a"); // alone: it takes every job
      for (Job job : Job.values()) {
        assertThat(cluster.leaderOf(job.key)).as(job.label()).isEqualTo("a");
      }
      cluster.start("b");
      ChildGateway a = cluster.node("a");
      ChildGateway b = cluster.node("b");
      assertThat(leadsGauges(cluster, "a")).as("a's view before the freeze").containsOnly(1);
      int aLed = a.log("node a now leads").size();

      a.freeze();
      long frozen = System.nanoTime();
      Poll.until(DEAD_AFTER.plus(MARGIN).multipliedBy(3), "node b leads every job", () -> everyJobLedBy(cluster, "b"));
      Duration takeover = Duration.ofNanos(System.nanoTime() - frozen);
      System.out.println("node b took every job " + takeover.toMillis() + " ms after node a was frozen");
      assertThat(takeover).as("the bound is the heartbeat, not the freeze").isLessThan(DEAD_AFTER.plus(MARGIN));
      // a's last heartbeat came at most one interval before the freeze (less the time kill took to return).
      assertThat(takeover).as("not before a's heartbeat was older than node.deadAfter")
          .isGreaterThan(DEAD_AFTER.minus(HEARTBEAT).minusMillis(250));
      // One take-over, said once, naming the frozen node, its session and its heartbeat's age.
      assertThat(b.log("node b ended the lock session of node a")).hasSize(1);

      // The cluster publishes again while a is still frozen: a message relayed through b gets its pub_seq.
      String id;
      try (SmtpTestClient c = new SmtpTestClient(b.smtpPort())) {
        c.reply();
        String reply = c.sendMail("frozen@example.com", List.of("x@example.net"),
            "Message-ID: <frozen@example.com>\r\nSubject: frozen\r\n\r\nbody\r\n");
        assertThat(reply).startsWith("250 ");
        id = dev.ledgerpost.testing.InvariantCheck.ledgerId(reply);
      }
      Poll.until(Duration.ofSeconds(30), "the message's events published by b", () -> LedgerRows.count(cluster.ledgerUrl(),
          "SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND pub_seq IS NOT NULL") >= 2);

      a.thaw();
      // From the moment it runs again, a leads nothing: its last heartbeat is older than node.deadAfter.
      assertThat(leadsGauges(cluster, "a")).as("a's view right after SIGCONT").containsOnly(0);
      Poll.until(Duration.ofSeconds(30), "node a steps down", () -> !a.log("node a stops leading").isEmpty());
      Poll.until(Duration.ofSeconds(30), "node a back on the ledger", () -> !a.log("node a: lock connection back").isEmpty());
      // A few heartbeats later: every job still with b, a's view agrees, and a never took one again.
      Poll.until(Duration.ofSeconds(30), "a's heartbeat renewed", () -> LedgerRows.count(cluster.ledgerUrl(),
          "SELECT count(*) FROM nodes WHERE id = 'a' AND heartbeat_at > now() - interval '1 second'") == 1);
      assertThat(everyJobLedBy(cluster, "b")).isTrue();
      assertThat(leadsGauges(cluster, "a")).containsOnly(0);
      assertThat(leadsGauges(cluster, "b")).containsOnly(1);
      assertThat(a.log("node a now leads")).as("a did not lead again").hasSize(aLed);
      assertThat(b.log("ended the lock session")).as("a live node is not ended").hasSize(1);
      // Fencing held for publishing: pub_seq has no gap and no repeat.
      assertThat(LedgerRows.count(cluster.ledgerUrl(), """
          SELECT count(*) FROM (SELECT pub_seq, lag(pub_seq) OVER (ORDER BY pub_seq) AS before
                                  FROM outbox_events WHERE pub_seq IS NOT NULL) s
           WHERE before IS NOT NULL AND pub_seq <> before + 1""")).as("pub_seq gaps or repeats").isZero();
    } finally {
      cluster.close(); // SIGCONT before SIGTERM
      GatewayHarness.await(vertx.close());
    }
  }

  private static boolean everyJobLedBy(Cluster cluster, String node) throws Exception {
    for (Job job : Job.values()) {
      if (!node.equals(cluster.leaderOf(job.key))) {
        return false;
      }
    }
    return true;
  }

  /** The values of a node's own leads gauges, one per job. */
  private static java.util.Collection<Integer> leadsGauges(Cluster cluster, String id) throws Exception {
    Map<String, Integer> leads = cluster.leads(id);
    assertThat(leads).as("one gauge per job").hasSize(Job.values().length);
    return leads.values();
  }
}
