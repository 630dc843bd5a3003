package dev.ledgerpost.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.TcpProxy;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A node cut off from the ledger stops its single-active jobs by itself, while PostgreSQL still counts it as
 * the holder, so nobody else runs them at the same time; once PostgreSQL drops the session, another node
 * takes them (docs/design.md §9.2). The cut is real: node a reaches PostgreSQL through a proxy that goes
 * silent (no byte either way, nothing closed), then drops the connections.
 */
class FencingTest {
  static final Duration HEARTBEAT = Duration.ofMillis(500);
  /** NodeVerticle's deadline for the lock connection's answer. */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);

  @Test
  void aNodeThatLosesItsLockConnectionStopsLeadingBeforeAnotherNodeCanTakeOver() throws Exception {
    Vertx vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    Cluster cluster = Cluster.create(downstream.port(), Map.of(
        "node", List.of("heartbeatInterval: " + HEARTBEAT.toMillis() + "ms", "deadAfter: 3s")));
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
      Poll.until(Duration.ofSeconds(30), "node a fences itself", () -> !cluster.node("a").log("node a stops leading").isEmpty());
      Duration fenced = Duration.ofNanos(System.nanoTime() - cut);
      System.out.println("node a stopped leading " + fenced.toMillis() + " ms after the cut");
      assertThat(fenced).isLessThan(HEARTBEAT.plus(ANSWER_TIMEOUT).plusSeconds(2)); // the poll's own delay
      for (Job job : Job.values()) {
        // PostgreSQL has not noticed anything: a's session, and its locks, are still there.
        assertThat(cluster.leaderOf(job.key)).as("holder of %s while a is fenced", job.label()).isEqualTo("a");
      }

      cable.cutAll(); // what PostgreSQL's keepalives do to a half-open session, at once
      long dropped = System.nanoTime();
      Poll.until(Duration.ofSeconds(30), "node b leads every job", () -> {
        for (Job job : Job.values()) {
          if (!"b".equals(cluster.leaderOf(job.key))) {
            return false;
          }
        }
        return true;
      });
      System.out.println("node b took every job " + (System.nanoTime() - dropped) / 1_000_000 + " ms after the session ended");

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
