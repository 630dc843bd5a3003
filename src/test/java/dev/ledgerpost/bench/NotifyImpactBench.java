package dev.ledgerpost.bench;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.WsTestClient;

/**
 * SMTP throughput with and without a WebSocket subscriber that never reads (issue: a failing
 * subscriber must not slow intake). Runs alternate, so drift of the machine hits both sides.
 * Loopback only, bounded: {@code rounds} x 2 runs of {@code messages} messages over {@code sessions}.
 *
 * <pre>bench/notify-impact.sh [messages] [sessions] [rounds]</pre>
 */
public final class NotifyImpactBench {
  public static void main(String[] args) {
    ImpactBench.runAndExit(args, (a, vertx, smarthostPort) -> {
      try (GatewayHarness gateway = GatewayHarness.start(vertx, GatewayHarness.defaults(smarthostPort))) {
        ImpactBench.compare(gateway, a, "without subscriber", run -> run.call(), "with a never-reading subscriber", run -> {
          try (WsTestClient stalled = WsTestClient.connect(vertx, gateway.httpPort(), null, gateway.gateway().adminToken())) {
            stalled.socket().pause(); // connected, never reads: the hub must cut it loose, not wait for it
            return run.call();
          }
        }, "with/without");
      }
    });
  }
}
