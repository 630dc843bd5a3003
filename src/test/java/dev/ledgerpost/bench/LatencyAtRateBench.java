package dev.ledgerpost.bench;

import dev.ledgerpost.testing.SmtpTestClient;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Reply latency at a fixed offered rate: S sessions share R messages/s (each session paces itself),
 * N messages in all; prints p50/p99 of "final dot written -> reply read". Run it against the sink
 * directly and against the gateway at half its maximum throughput: the difference is what the
 * gateway adds. Loopback only; bounded by N.
 *
 * <pre>java ... LatencyAtRateBench PORT RATE SESSIONS COUNT</pre>
 */
public final class LatencyAtRateBench {
  static final String BODY = "Subject: latency\r\n\r\n" + ("z".repeat(74) + "\r\n").repeat(26);

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    double rate = Double.parseDouble(args[1]);
    int sessions = Integer.parseInt(args[2]);
    int count = Integer.parseInt(args[3]);
    ConcurrentLinkedQueue<Long> micros = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(sessions);
    long intervalNanos = (long) (1e9 * sessions / rate);
    long start = System.nanoTime();
    List<Future<?>> all = new ArrayList<>();
    for (int s = 0; s < sessions; s++) {
      int offset = s;
      all.add(pool.submit(() -> {
        try (SmtpTestClient c = new SmtpTestClient(port)) {
          c.reply();
          c.command("EHLO latency.test");
          long next = start + offset * intervalNanos / sessions;
          for (int i = 0; i < count / sessions; i++) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
              TimeUnit.NANOSECONDS.sleep(wait); // pacing of the offered load, not synchronisation
            }
            next += intervalNanos;
            c.command("MAIL FROM:<latency@example.com>");
            c.command("RCPT TO:<sink@example.net>");
            c.command("DATA");
            c.send(BODY + ".\r\n");
            long t0 = System.nanoTime();
            String reply = c.reply();
            micros.add((System.nanoTime() - t0) / 1000);
            if (!reply.startsWith("250")) {
              throw new IllegalStateException(reply);
            }
          }
        }
        return null;
      }));
    }
    for (Future<?> f : all) {
      f.get(10, TimeUnit.MINUTES);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    pool.shutdownNow();
    List<Long> sorted = new ArrayList<>(micros);
    Collections.sort(sorted);
    System.out.printf(Locale.ROOT, "offered %.0f msg/s, achieved %.0f msg/s over %d sessions: reply after final dot p50 %.2f ms, p99 %.2f ms%n",
        rate, sorted.size() / seconds, sessions, sorted.get(sorted.size() / 2) / 1000.0,
        sorted.get((int) Math.ceil(0.99 * sorted.size()) - 1) / 1000.0);
  }
}
