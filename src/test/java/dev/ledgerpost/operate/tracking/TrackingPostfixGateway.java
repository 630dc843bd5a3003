package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The gateway of the tracking tests with a real Postfix as its smarthost: a private Postfix {@code name} relays to the
 * harness's scripted next hop, which refuses {@code gone@} recipients with 550 5.1.1 after Postfix queued them (so
 * Postfix bounces them) and accepts the others; the gateway follows that Postfix's log every 100 ms. The Postfix is
 * handed to {@code started}.
 */
final class TrackingPostfixGateway {
  private TrackingPostfixGateway() {}

  static GatewayHarness extension(String name, Consumer<PostfixInstance> started) {
    return GatewayHarness.extension()
        .with("tracking.pollInterval", "100ms")
        .script(g -> new ScriptedSmtpServer.Script() {
          @Override
          public String rcpt(String to) {
            return to.contains("gone@") ? "550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown" : "250 2.1.5 Ok";
          }
        })
        .configure((g, o) -> {
          PostfixInstance postfix = g.closeAfter(PostfixInstance.start(name, Map.of(
              "relayhost", "[127.0.0.1]:" + g.downstream().port(),
              "smtpd_relay_restrictions", "permit_mynetworks, reject"), true));
          started.accept(postfix);
          o.put("downstream.port", postfix.port());
          o.put("tracking.postfixLog", postfix.dir().resolve("maillog").toString());
        });
  }
}
