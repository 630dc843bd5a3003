package dev.ledgerpost.bench;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * SMTP throughput with and without a WebSocket subscriber that never reads (issue: a failing
 * subscriber must not slow intake). Runs alternate, so drift of the machine hits both sides.
 * Loopback only, bounded: {@code rounds} x 2 runs of {@code messages} messages over {@code sessions}.
 *
 * <pre>bench/notify-impact.sh [messages] [sessions] [rounds]</pre>
 */
public final class NotifyImpactBench {
  /** About 2 KB in 76-octet lines, like a small notification mail. */
  static final String BODY = "Subject: bench\r\n\r\n" + ("x".repeat(74) + "\r\n").repeat(26);

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
    try (GatewayHarness gateway = GatewayHarness.start(vertx, GatewayHarness.defaults(downstream.port()))) {
      run(gateway, messages, sessions); // warm-up: JIT and PostgreSQL caches
      List<Double> without = new ArrayList<>();
      List<Double> with = new ArrayList<>();
      for (int r = 0; r < rounds; r++) {
        without.add(run(gateway, messages, sessions));
        try (WsTestClient stalled = WsTestClient.connect(vertx, gateway.httpPort(), null, gateway.gateway().adminToken())) {
          stalled.socket().pause(); // connected, never reads: the hub must cut it loose, not wait for it
          with.add(run(gateway, messages, sessions));
        }
      }
      double a = median(without);
      double b = median(with);
      System.out.printf(Locale.ROOT, "messages/run=%d sessions=%d rounds=%d%n", messages, sessions, rounds);
      System.out.printf(Locale.ROOT, "without subscriber: %s msg/s (median %.1f)%n", without, a);
      System.out.printf(Locale.ROOT, "with a never-reading subscriber: %s msg/s (median %.1f)%n", with, b);
      System.out.printf(Locale.ROOT, "ratio with/without: %.3f%n", b / a);
    }
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
            String reply = c.sendMail("bench@example.com", List.of("sink@example.net"), BODY);
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
