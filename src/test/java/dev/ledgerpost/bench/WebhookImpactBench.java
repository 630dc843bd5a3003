package dev.ledgerpost.bench;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

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
    try {
      bench(args);
      System.exit(0);
    } catch (Exception e) {
      e.printStackTrace();
      System.exit(1);
    }
  }

  private static void bench(String[] args) throws Exception {
    int messages = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    int sessions = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    Vertx vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    WebhookReceiver receiver = GatewayHarness.await(WebhookReceiver.start(vertx, r -> Answer.of(200)));
    Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    byte[] key = new byte[32];
    o.put("webhooks.endpoints", List.of(Map.of("name", "bench", "url", receiver.url("/h"),
        "secret", "whsec_" + java.util.Base64.getEncoder().encodeToString(key), "events", List.of("message.settled"))));
    o.put("webhooks.timeout", "2s");
    o.put("webhooks.retrySchedule", "0s, 1s, 1s, 1s");
    try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
      run(gateway, messages, sessions); // warm-up: JIT and PostgreSQL caches
      List<Double> answering = new ArrayList<>();
      List<Double> hanging = new ArrayList<>();
      for (int r = 0; r < rounds; r++) {
        receiver.script(x -> Answer.of(200));
        answering.add(run(gateway, messages, sessions));
        receiver.script(x -> Answer.hang());
        hanging.add(run(gateway, messages, sessions));
      }
      double a = median(answering);
      double b = median(hanging);
      System.out.printf(Locale.ROOT, "messages/run=%d sessions=%d rounds=%d%n", messages, sessions, rounds);
      System.out.printf(Locale.ROOT, "webhook receiver answering: %s msg/s (median %.1f)%n", answering, a);
      System.out.printf(Locale.ROOT, "webhook receiver hanging until webhooks.timeout: %s msg/s (median %.1f)%n", hanging, b);
      System.out.printf(Locale.ROOT, "ratio hanging/answering: %.3f%n", b / a);
      System.out.printf(Locale.ROOT, "webhook requests received: %d%n", receiver.requests().size());
    }
    receiver.close();
    GatewayHarness.await(vertx.close());
  }

  private static double run(GatewayHarness gateway, int messages, int sessions) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(sessions);
    int per = messages / sessions;
    long start = System.nanoTime();
    List<Future<Integer>> results = new ArrayList<>();
    for (int s = 0; s < sessions; s++) {
      results.add(pool.submit(() -> {
        int ok = 0;
        try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
          c.reply();
          for (int i = 0; i < per; i++) {
            String reply = c.sendMail("bench@example.com", List.of("sink@example.net"), NotifyImpactBench.BODY);
            if (!reply.startsWith("250")) {
              throw new IllegalStateException("refused: " + reply);
            }
            ok++;
          }
        }
        return ok;
      }));
    }
    int ok = 0;
    for (Future<Integer> f : results) {
      ok += f.get(10, TimeUnit.MINUTES);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    pool.shutdownNow();
    if (ok != per * sessions) {
      throw new IllegalStateException(ok + " of " + per * sessions + " messages accepted");
    }
    return Math.round(ok / seconds * 10) / 10.0;
  }

  private static double median(List<Double> xs) {
    List<Double> s = new ArrayList<>(xs);
    s.sort(Double::compare);
    return s.get(s.size() / 2);
  }
}
