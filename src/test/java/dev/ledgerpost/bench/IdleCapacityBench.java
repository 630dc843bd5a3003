package dev.ledgerpost.bench;

import dev.ledgerpost.testing.SmtpTestClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Idle capacity: holds N SMTP sessions open against a running gateway (each greeted and past EHLO),
 * then times a new client's whole transaction. Loopback only; bounded by N.
 *
 * <pre>bench/idle.sh [connections]</pre>
 */
public final class IdleCapacityBench {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    try (SmtpTestClient warm = new SmtpTestClient(port)) { // a running gateway is warm: JIT, the smarthost connection
      warm.reply();
      for (int i = 0; i < 50; i++) {
        warm.sendMail("warm@example.com", List.of("sink@example.net"), "Subject: warm-up\r\n\r\nbody");
      }
    }
    List<SmtpTestClient> idle = new ArrayList<>(n);
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      SmtpTestClient c = new SmtpTestClient(port);
      if (!c.reply().startsWith("220") || !c.command("EHLO idle" + i + ".test").startsWith("250")) {
        throw new IllegalStateException("connection " + i + " was not served");
      }
      idle.add(c);
    }
    System.out.printf(Locale.ROOT, "%d idle sessions open (greeted, past EHLO) in %.1f s%n", n, (System.nanoTime() - t0) / 1e9);
    List<Double> ms = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      long s = System.nanoTime();
      try (SmtpTestClient c = new SmtpTestClient(port)) {
        c.reply();
        String reply = c.sendMail("new@example.com", List.of("sink@example.net"), "Subject: new client\r\n\r\nbody");
        if (!reply.startsWith("250")) {
          throw new IllegalStateException(reply);
        }
        c.command("QUIT");
      }
      ms.add((System.nanoTime() - s) / 1e6);
    }
    ms.sort(Double::compare);
    System.out.printf(Locale.ROOT, "new client, connect to 250 after its final dot, 20 tries: median %.1f ms, max %.1f ms (target: within 100 ms)%n",
        ms.get(ms.size() / 2), ms.get(ms.size() - 1));
    for (SmtpTestClient c : idle) {
      c.close();
    }
  }
}
