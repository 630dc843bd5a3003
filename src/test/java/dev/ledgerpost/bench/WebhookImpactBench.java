package dev.ledgerpost.bench;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * SMTP throughput while a webhook endpoint answers at once, and while it hangs every request until
 * {@code webhooks.timeout} (issue 15: a slow endpoint must not slow intake; the isolation itself is tested
 * structurally in WebhookDeliveryTest). Runs alternate, so drift of the machine hits both sides. Loopback only,
 * bounded: {@code rounds} x 2 runs of {@code messages} messages over {@code sessions}.
 *
 * <pre>bench/webhook-impact.sh [messages] [sessions] [rounds]</pre>
 */
public final class WebhookImpactBench {
  public static void main(String[] args) {
    ImpactBench.runAndExit(args, (a, vertx, smarthostPort) -> {
      WebhookReceiver receiver = GatewayHarness.await(WebhookReceiver.start(vertx, r -> Answer.of(200)));
      Map<String, Object> o = GatewayHarness.defaults(smarthostPort);
      byte[] key = new byte[32];
      o.put("webhooks.endpoints", List.of(Map.of("name", "bench", "url", receiver.url("/h"),
          "secret", "whsec_" + java.util.Base64.getEncoder().encodeToString(key), "events", List.of("message.settled"))));
      o.put("webhooks.timeout", "2s");
      o.put("webhooks.retrySchedule", "0s, 1s, 1s, 1s");
      try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
        ImpactBench.compare(gateway, a, "webhook receiver answering", run -> {
          receiver.script(x -> Answer.of(200));
          return run.call();
        }, "webhook receiver hanging until webhooks.timeout", run -> {
          receiver.script(x -> Answer.hang());
          return run.call();
        }, "hanging/answering");
        System.out.printf(Locale.ROOT, "webhook requests received: %d%n", receiver.requests().size());
      }
      receiver.close();
    });
  }
}
