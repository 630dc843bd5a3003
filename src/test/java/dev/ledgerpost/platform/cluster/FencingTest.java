package dev.ledgerpost.platform.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.RunsAlone;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.TcpProxy;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A node cut off from the ledger stops its single-active jobs by itself, and another node takes them once the cut-off
 * node's heartbeat is older than {@code node.deadAfter}, ending its session, which PostgreSQL would otherwise keep for
 * about 30 s; the cut-off node has stopped acting on them by then (its lease, docs/design.md §9.2), so nobody runs a
 * job at the same time as another. The cut is real: node a reaches PostgreSQL through a proxy that goes silent (no
 * byte either way, nothing closed), then drops the connections.
 */
@RunsAlone
class FencingTest {
  static final Duration HEARTBEAT = Duration.ofMillis(500);
  static final Duration DEAD_AFTER = Duration.ofSeconds(3);
  /** NodeVerticle's deadline for the lock connection's answer. */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);

  @Test
  void aNodeThatLosesItsLockConnectionStopsLeadingBeforeAnotherNodeCanTakeOver() throws Exception {
    Vertx vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    Cluster cluster = Cluster.create(downstream.port(), Map.of(
        "node", List.of("heartbeatInterval: " + HEARTBEAT.toMillis() + "ms", "deadAfter: " + DEAD_AFTER.toSeconds() + "s")));
    var pg = cluster.ledgerAddress();
    try (TcpProxy cable = TcpProxy.to(pg.getHostString(), pg.getPort())) {
      cluster.routeLedger("a", "127.0.0.1", cable.port());
      cluster.start("a"); // alone: it takes every job
      for (Job job : Job.values()) {
        assertThat(cluster.leaderOf(job.key)).as(job.label()).isEqualTo("a");
      }
      cluster.start("b");

      cable.freeze();
      long cut = System.nanoTime();
      // PostgreSQL has noticed nothing (a's session and its locks are still there): b ends that session, a's heartbeat
      // being older than node.deadAfter, and takes every job.
      Poll.until(Duration.ofSeconds(30), "node b leads every job", () -> {
        for (Job job : Job.values()) {
          if (!"b".equals(cluster.leaderOf(job.key))) {
            return false;
          }
        }
        return true;
      });
      Duration taken = Duration.ofNanos(System.nanoTime() - cut);
      System.out.println("node b took every job " + taken.toMillis() + " ms after the cut");
      assertThat(taken).isLessThan(DEAD_AFTER.plus(HEARTBEAT).plusSeconds(3)); // a 2-core machine, the poll's own delay
      // From the moment b leads, a does not act on any job, though it has not heard of b (its lease ran out).
      assertThat(cluster.leads("a").values()).as("what a says it leads").hasSize(Job.values().length).containsOnly(0);
      assertThat(cluster.node("b").log("node b ended the lock session of node a")).hasSize(1);
      Poll.until(Duration.ofSeconds(30), "node a fences itself", () -> !cluster.node("a").log("node a stops leading").isEmpty());
      Duration fenced = Duration.ofNanos(System.nanoTime() - cut);
      System.out.println("node a stopped leading " + fenced.toMillis() + " ms after the cut");
      assertThat(fenced).isLessThan(HEARTBEAT.plus(ANSWER_TIMEOUT).plusSeconds(2)); // the poll's own delay

      cable.cutAll(); // a's connections through the silent cable, as PostgreSQL's keepalives would drop them

      int led = cluster.node("a").log("node a now leads").size();
      cable.heal();
      Poll.until(Duration.ofSeconds(30), "node a back on the ledger", () -> !cluster.node("a").log("node a: lock connection back").isEmpty());
      for (Job job : Job.values()) {
        assertThat(cluster.leaderOf(job.key)).as("%s stays with b", job.label()).isEqualTo("b");
      }
      assertThat(cluster.node("a").log("node a now leads")).as("a did not lead again").hasSize(led);
    } finally {
      cluster.close();
      GatewayHarness.await(vertx.close());
    }
  }
}
