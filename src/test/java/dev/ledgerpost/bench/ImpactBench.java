package dev.ledgerpost.bench;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The frame the impact benches share: SMTP throughput of one gateway under a baseline condition and under an impaired
 * one, in alternating runs, so that drift of the machine hits both sides. Loopback only, bounded: a warm-up, then
 * {@code rounds} x 2 runs of {@code messages} messages over {@code sessions}.
 */
final class ImpactBench {
  /** About 2 KB in 76-octet lines, like a small notification mail. */
  static final String BODY = "Subject: bench\r\n\r\n" + ("x".repeat(74) + "\r\n").repeat(26);

  /** {@code [messages] [sessions] [rounds]}, as the bench scripts pass them. */
  record Args(int messages, int sessions, int rounds) {
    static Args of(String[] args) {
      return new Args(args.length > 0 ? Integer.parseInt(args[0]) : 2000, args.length > 1 ? Integer.parseInt(args[1]) : 20,
          args.length > 2 ? Integer.parseInt(args[2]) : 3);
    }
  }

  /** What a bench does with its arguments, on a Vert.x with a scripted smarthost at {@code smarthostPort}. */
  interface Bench {
    void run(Args args, Vertx vertx, int smarthostPort) throws Exception;
  }

  /** A condition set up around one measured run ({@code run}), answering its msg/s. */
  interface Condition {
    double under(Callable<Double> run) throws Exception;
  }

  private ImpactBench() {}

  /** Runs {@code bench} and exits: 0 when it finished, 1 (with the stack trace) when it failed. */
  static void runAndExit(String[] args, Bench bench) {
    try {
      Vertx vertx = Vertx.vertx();
      ScriptedSmtpServer smarthost = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      bench.run(Args.of(args), vertx, smarthost.port());
      GatewayHarness.await(vertx.close());
      System.exit(0);
    } catch (Exception e) {
      e.printStackTrace();
      System.exit(1);
    }
  }

  /** The warm-up, the alternating runs, and the report: both sides' msg/s with their medians, and the ratio. */
  static void compare(GatewayHarness gateway, Args a, String baselineName, Condition baseline, String impairedName,
      Condition impaired, String ratioName) throws Exception {
    Callable<Double> run = () -> run(gateway, a.messages(), a.sessions());
    run.call(); // warm-up: JIT and PostgreSQL caches
    List<Double> base = new ArrayList<>();
    List<Double> under = new ArrayList<>();
    for (int r = 0; r < a.rounds(); r++) {
      base.add(baseline.under(run));
      under.add(impaired.under(run));
    }
    double b = median(base);
    double i = median(under);
    System.out.printf(Locale.ROOT, "messages/run=%d sessions=%d rounds=%d%n", a.messages(), a.sessions(), a.rounds());
    System.out.printf(Locale.ROOT, "%s: %s msg/s (median %.1f)%n", baselineName, base, b);
    System.out.printf(Locale.ROOT, "%s: %s msg/s (median %.1f)%n", impairedName, under, i);
    System.out.printf(Locale.ROOT, "ratio %s: %.3f%n", ratioName, i / b);
  }

  /** Accepted messages per second over {@code sessions} SMTP sessions; every message must be accepted. */
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
