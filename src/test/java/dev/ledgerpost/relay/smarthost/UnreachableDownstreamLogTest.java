package dev.ledgerpost.relay.smarthost;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import java.net.ServerSocket;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A smarthost nobody listens on (a real closed port): every client hears 451 4.4.1, and the log says why once,
 * not once per client (at most one line a minute).
 */
class UnreachableDownstreamLogTest {

  @Test
  void anUnreachableSmarthostIsLoggedOnceWithTheReasonWhileEveryClientHears451() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Vertx vertx = Vertx.vertx();
    Map<String, Object> o = GatewayHarness.defaults(closed);
    try (LogCapture log = LogCapture.of(DownstreamSlots.class.getName());
        GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
      for (int i = 0; i < 3; i++) {
        try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
          c.reply();
          c.command("EHLO client.test");
          assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("451 4.4.1");
        }
      }
      assertThat(log.warningsContaining("downstream 127.0.0.1:" + closed + " unreachable", "onnection refused",
          "clients hear 451 4.4.1")).hasSize(1);
    } finally {
      GatewayHarness.await(vertx.close());
    }
  }
}
