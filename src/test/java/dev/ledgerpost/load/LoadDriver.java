package dev.ledgerpost.load;

import dev.ledgerpost.ledger.LedgerPart;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The k6 scenarios, run here with a Java client (k6 cannot be installed on these machines): it starts
 * a gateway with chaos mode and a recording downstream on loopback, drives it over real sockets,
 * prints throughput, latency percentiles and the invariant check. Bounded in count and time.
 *
 * <pre>bench/load.sh smtp-send|lock-contention|ws-watchers|http-send|http-lock-contention [messages] [connections]</pre>
 */
public final class LoadDriver {
  public record Report(String scenario, int messages, double seconds, List<Long> latenciesMicros,
      InvariantCheck.Result invariants, String extra) {
    public double throughput() {
      return messages / seconds;
    }

    public long percentileMicros(double p) {
      List<Long> sorted = new ArrayList<>(latenciesMicros);
      Collections.sort(sorted);
      return sorted.isEmpty() ? 0 : sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT,
          "%s: %d messages in %.1f s = %.1f msg/s; reply latency p50 %.1f ms, p99 %.1f ms, max %.1f ms%n  invariants: %s%s",
          scenario, messages, seconds, throughput(), percentileMicros(0.5) / 1000.0, percentileMicros(0.99) / 1000.0,
          percentileMicros(1.0) / 1000.0, invariants, extra.isEmpty() ? "" : "\n  " + extra);
    }
  }

  private static final Duration MAX_RUN = Duration.ofMinutes(10);
  private static final String API_KEY = "load-driver-key";

  private LoadDriver() {}

  public static void main(String[] args) {
    String scenario = args.length > 0 ? args[0] : "lock-contention";
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 300;
    int connections = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    try {
      Report r = run(scenario, messages, connections);
      System.out.println(r);
      System.exit(r.invariants().ok() ? 0 : 1);
    } catch (Exception e) {
      e.printStackTrace();
      System.exit(2);
    }
  }

  public static Report run(String scenario, int messages, int connections) throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      Map<String, Object> o = GatewayHarness.defaults(downstream.port());
      o.put("chaos.enabled", true);
      o.put("api.keysFile", dev.ledgerpost.testing.SendClient.keysFile(Map.of(API_KEY, "load:100000")).toString());
      o.put("ledger.lockTimeout", "250ms");
      try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
        return switch (scenario) {
          case "smtp-send" -> smtp(gateway, downstream, messages, connections, false, 0, vertx);
          case "lock-contention" -> smtp(gateway, downstream, messages, connections, true, 0, vertx);
          case "ws-watchers" -> smtp(gateway, downstream, messages, connections, false, 50, vertx);
          case "http-send" -> http(gateway, downstream, messages, connections, false);
          case "http-lock-contention" -> http(gateway, downstream, messages, connections, true);
          default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        };
      }
    } finally {
      GatewayHarness.await(vertx.close());
    }
  }

  /** One client connection of a scenario: sends one message and says what the client heard. */
  private interface Sender extends AutoCloseable {
    InvariantCheck.Heard send(String messageId) throws Exception;

    @Override
    default void close() throws Exception {}
  }

  private record Run(List<InvariantCheck.Heard> heard, List<Long> latenciesMicros, double seconds, int locks) {}

  /** Runs {@code connections} senders (and the chaos loop if asked), bounded by count and {@link #MAX_RUN}. */
  private static Run drive(GatewayHarness gateway, int messages, int connections, boolean chaos,
      java.util.concurrent.Callable<Sender> connect) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(connections + 1);
    ConcurrentLinkedQueue<InvariantCheck.Heard> heard = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger locks = new AtomicInteger();
    long deadline = System.nanoTime() + MAX_RUN.toNanos();
    try {
      Future<?> chaosLoop = chaos ? pool.submit(() -> lockAtRandom(gateway, done, locks, deadline)) : null;
      long start = System.nanoTime();
      List<Future<?>> senders = new ArrayList<>();
      int per = messages / connections;
      for (int c = 0; c < connections; c++) {
        int conn = c;
        senders.add(pool.submit(() -> {
          try (Sender sender = connect.call()) {
            for (int i = 0; i < per && System.nanoTime() < deadline; i++) {
              long t0 = System.nanoTime();
              heard.add(sender.send("<load-" + conn + "-" + i + "@example.com>"));
              latencies.add((System.nanoTime() - t0) / 1000);
            }
          }
          return null;
        }));
      }
      for (Future<?> f : senders) {
        f.get(MAX_RUN.toMinutes(), TimeUnit.MINUTES);
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      done.set(true);
      if (chaosLoop != null) {
        chaosLoop.get(1, TimeUnit.MINUTES);
      }
      return new Run(List.copyOf(heard), List.copyOf(latencies), seconds, locks.get());
    } finally {
      pool.shutdownNow();
    }
  }

  private static String body(String messageId) {
    return "Message-ID: " + messageId + "\r\nSubject: load\r\n\r\n" + ("y".repeat(74) + "\r\n").repeat(26);
  }

  private static Report smtp(GatewayHarness gateway, ScriptedSmtpServer downstream, int messages, int connections,
      boolean chaos, int watchers, Vertx vertx) throws Exception {
    List<WsTestClient> subscribers = new ArrayList<>();
    for (int i = 0; i < watchers; i++) {
      subscribers.add(WsTestClient.connect(vertx, gateway.httpPort(), "client=w" + i, gateway.gateway().adminToken()));
    }
    Run run = drive(gateway, messages, connections, chaos, () -> {
      SmtpTestClient client = new SmtpTestClient(gateway.smtpPort());
      client.reply();
      return new Sender() {
        @Override
        public InvariantCheck.Heard send(String messageId) throws Exception {
          String reply = client.sendMail("load@example.com", List.of("sink@example.net"), body(messageId));
          boolean accepted = reply.startsWith("250 ");
          if (!accepted && !reply.startsWith("451 4.3.0")) {
            throw new IllegalStateException("unexpected reply " + reply);
          }
          return new InvariantCheck.Heard(messageId, accepted, accepted ? InvariantCheck.ledgerId(reply) : null, true, reply);
        }

        @Override
        public void close() throws Exception {
          client.close();
        }
      };
    });
    String extra = chaos ? run.locks() + " chaos locks taken, retries " + gateway.gateway().part(LedgerPart.class).retries() : "";
    if (watchers > 0) {
      extra = watcherSummary(subscribers, run.heard().size());
    }
    InvariantCheck.Result result = InvariantCheck.check(gateway.databaseUrl(), downstream.messages(), run.heard());
    return new Report(chaos ? "lock-contention (SMTP)" : watchers > 0 ? "ws-watchers (SMTP)" : "smtp-send",
        run.heard().size(), run.seconds(), run.latenciesMicros(), result, extra);
  }

  /**
   * The same over the HTTP send API (raw messages, so each carries its own Message-ID), as k6's
   * http-send.js and lock-contention.js do: every answer must be 200/202 (recorded) or 503 (nothing sent).
   */
  private static Report http(GatewayHarness gateway, ScriptedSmtpServer downstream, int messages, int connections,
      boolean chaos) throws Exception {
    dev.ledgerpost.testing.SendClient client = new dev.ledgerpost.testing.SendClient(gateway.httpPort());
    Run run = drive(gateway, messages, connections, chaos, () -> messageId -> {
      JsonObject body = new JsonObject()
          .put("envelope", new JsonObject().put("from", "load@example.com").put("to", new JsonArray().add("sink@example.net")))
          .put("raw", java.util.Base64.getEncoder().encodeToString(body(messageId).getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      HttpResponse<String> r = client.send(API_KEY, java.util.UUID.randomUUID().toString(), body.encode());
      boolean accepted = r.statusCode() == 200 || r.statusCode() == 202;
      if (!accepted && r.statusCode() != 503) {
        throw new IllegalStateException("unexpected answer " + r.statusCode() + " " + r.body());
      }
      String ledgerId = accepted ? new JsonObject(r.body()).getString("operationId") : null;
      return new InvariantCheck.Heard(messageId, accepted, ledgerId, true, r.statusCode() + " " + r.body());
    });
    InvariantCheck.Result result = InvariantCheck.check(gateway.databaseUrl(), downstream.messages(), run.heard());
    return new Report(chaos ? "lock-contention (HTTP)" : "http-send", run.heard().size(), run.seconds(),
        run.latenciesMicros(), result, chaos ? run.locks() + " chaos locks taken, retries " + gateway.gateway().part(LedgerPart.class).retries() : "");
  }

  /** Each watcher must see a settled event for every accepted message. */
  private static String watcherSummary(List<WsTestClient> watchers, int messages) throws Exception {
    int complete = 0;
    long until = System.nanoTime() + Duration.ofSeconds(30).toNanos(); // one deadline for all of them
    for (WsTestClient w : watchers) {
      int settled = 0;
      while (settled < messages && System.nanoTime() < until) {
        JsonObject f = w.poll();
        if (f == null) {
          Thread.sleep(5); // polling with a deadline
          continue;
        }
        if ("message.settled".equals(f.getString("event"))) {
          settled++;
        }
      }
      if (settled == messages) {
        complete++;
      } else {
        System.out.println("  a watcher saw " + settled + " of " + messages + " settled events (socket: " + w.isClosedNow() + ")");
      }
      w.close();
    }
    return complete + " of " + watchers.size() + " WebSocket watchers saw every settled event";
  }

  /** The chaos endpoint, called as k6's lock-contention.js does: random tables, random short holds. */
  private static Void lockAtRandom(GatewayHarness gateway, AtomicBoolean done, AtomicInteger locks, long deadline)
      throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    Random random = new Random(7);
    String[][] sets = {{"messages"}, {"recipients"}, {"outbox"}, {"messages", "recipients", "outbox"}};
    while (!done.get() && System.nanoTime() < deadline) {
      JsonObject body = new JsonObject().put("tables", new JsonArray(List.of((Object[]) sets[random.nextInt(sets.length)])))
          .put("millis", 100 + random.nextInt(1400));
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort()
              + "/api/v1/chaos/locks")).header("Authorization", "Bearer " + gateway.gateway().adminToken())
          .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 202) {
        locks.incrementAndGet();
      }
      Thread.sleep(body.getLong("millis") + 50 + random.nextInt(250)); // pacing of the load, not synchronisation
    }
    return null;
  }
}
