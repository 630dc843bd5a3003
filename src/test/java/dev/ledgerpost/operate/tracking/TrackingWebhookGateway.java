package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.WebhookReceiver;
import io.vertx.core.Future;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The gateway of the tracking tests that watch webhooks: it follows {@code log} every 50 ms, its scripted smarthost
 * answers {@code 250 2.0.0 Ok: queued as <queuedAs><n>} (the queue ids the test then writes into the log), and one
 * webhook endpoint {@code endpoint} for {@code events} goes to a receiver that answers 200, handed to {@code started}.
 */
final class TrackingWebhookGateway {
  private TrackingWebhookGateway() {}

  static GatewayHarness extension(Path log, String queuedAs, String endpoint, int secret, List<String> events,
      Consumer<WebhookReceiver> started) {
    return GatewayHarness.extension()
        .with("tracking.postfixLog", log.toString())
        .with("tracking.pollInterval", "50ms")
        .with("webhooks.pollInterval", "50ms")
        .script(g -> new ScriptedSmtpServer.Script() {
          @Override
          public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
            return Future.succeededFuture("250 2.0.0 Ok: queued as " + queuedAs + n);
          }
        })
        .configure((g, o) -> {
          WebhookReceiver receiver = g.closeAfter(GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(200))));
          started.accept(receiver);
          o.put("webhooks.endpoints", List.of(Map.of("name", endpoint, "url", receiver.url("/" + endpoint),
              "secret", WebhookDeliveryTest.secret(secret), "events", events)));
        });
  }
}
