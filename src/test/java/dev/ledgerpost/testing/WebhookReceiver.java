package dev.ledgerpost.testing;

import com.standardwebhooks.Webhook;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A webhook receiver on loopback, port 0 (a Vert.x HTTP server): it records every request and answers as its
 * script says: a status with headers, or nothing at all (a receiver that hangs). Signatures are checked with the
 * Standard Webhooks reference library ({@link #verify}).
 */
public final class WebhookReceiver implements AutoCloseable {
  /** One request as it arrived: its webhook headers, body, the n-th time this webhook-id came, and when. */
  public record Request(String path, String id, String timestamp, String signature, String body,
      Map<String, List<String>> headers, int nthOfId, Instant at) {}

  /**
   * What to answer: a status, headers and a body ({@code "answer <status>"} unless given) after {@code delayMillis},
   * or {@code hang}: never answer.
   */
  public record Answer(int status, Map<String, String> headers, boolean hangs, long delayMillis, String body) {
    public Answer(int status, Map<String, String> headers, boolean hangs, long delayMillis) {
      this(status, headers, hangs, delayMillis, "answer " + status);
    }

    public static Answer of(int status) {
      return new Answer(status, Map.of(), false, 0);
    }

    public static Answer of(int status, Map<String, String> headers) {
      return new Answer(status, headers, false, 0);
    }

    public static Answer of(int status, String body) {
      return new Answer(status, Map.of(), false, 0, body);
    }

    public static Answer after(long millis, int status) {
      return new Answer(status, Map.of(), false, millis);
    }

    public static Answer hang() {
      return new Answer(0, Map.of(), true, 0);
    }
  }

  @FunctionalInterface
  public interface Script {
    Answer answer(Request request);
  }

  private final HttpServer server;
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private final Map<String, AtomicInteger> perId = new ConcurrentHashMap<>();
  /** In flight now, and the most at once so far. */
  private final Map<String, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> mostOpen = new ConcurrentHashMap<>();
  private final List<HttpServerRequest> hanging = new CopyOnWriteArrayList<>();
  private volatile Script script;

  private final Vertx vertx;

  private WebhookReceiver(Vertx vertx, HttpServer server) {
    this.vertx = vertx;
    this.server = server;
  }

  public static Future<WebhookReceiver> start(Vertx vertx, Script script) {
    HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0));
    WebhookReceiver r = new WebhookReceiver(vertx, server);
    r.script = script;
    server.requestHandler(req -> req.body().onSuccess(body -> r.handle(req, body.toString())));
    return server.listen().map(s -> r);
  }

  private void handle(HttpServerRequest req, String body) {
    Map<String, List<String>> headers = new HashMap<>();
    req.headers().forEach(e -> headers.computeIfAbsent(e.getKey().toLowerCase(java.util.Locale.ROOT), k -> new ArrayList<>())
        .add(e.getValue()));
    String id = req.getHeader("webhook-id");
    int nth = perId.computeIfAbsent(String.valueOf(id), k -> new AtomicInteger()).incrementAndGet();
    Request r = new Request(req.path(), id, req.getHeader("webhook-timestamp"), req.getHeader("webhook-signature"), body, headers, nth,
        Instant.now());
    AtomicInteger pathOpen = open.computeIfAbsent(req.path(), k -> new AtomicInteger());
    int now = pathOpen.incrementAndGet();
    mostOpen.computeIfAbsent(req.path(), k -> new AtomicInteger()).accumulateAndGet(now, Math::max);
    requests.add(r);
    Answer a = script.answer(r);
    if (a.hangs()) {
      hanging.add(req);
      req.connection().closeHandler(v -> pathOpen.decrementAndGet());
      return;
    }
    a.headers().forEach((k, v) -> req.response().putHeader(k, v));
    if (a.delayMillis() > 0) {
      vertx.setTimer(a.delayMillis(), t -> req.response().setStatusCode(a.status()).end(a.body())
          .onComplete(x -> pathOpen.decrementAndGet()));
      return;
    }
    req.response().setStatusCode(a.status()).end(a.body()).onComplete(x -> pathOpen.decrementAndGet());
  }

  public void script(Script s) {
    script = s;
  }

  public int port() {
    return server.actualPort();
  }

  public String url(String path) {
    return "http://127.0.0.1:" + port() + path;
  }

  public List<Request> requests() {
    return List.copyOf(requests);
  }

  /** How many times each webhook-id arrived. */
  public Map<String, Integer> timesById() {
    Map<String, Integer> m = new HashMap<>();
    perId.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  /** The most requests to {@code path} that were open at once. */
  public int mostAtOnce(String path) {
    AtomicInteger m = mostOpen.get(path);
    return m == null ? 0 : m.get();
  }

  /** Throws unless the request's signature verifies with {@code secret} (the reference library, its 5-minute tolerance). */
  public static void verify(String secret, Request r) throws Exception {
    new Webhook(secret).verify(r.body(), r.headers());
  }

  @Override
  public void close() throws Exception {
    for (HttpServerRequest r : hanging) {
      r.connection().close();
    }
    GatewayHarness.await(server.close());
  }
}
