package dev.ledgerpost.publish.webhook;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * One endpoint's HTTP client (its own connection pool, at most {@code webhooks.concurrency} connections), so a
 * slow or hanging receiver holds only its own connections. One POST per attempt, never a redirect followed (the
 * URL is the configured one, and stays it: SSRF). The whole attempt, connecting included, is bounded by
 * {@code webhooks.timeout}: then the request is reset. Runs on the webhook verticle's event loop.
 *
 * <p>An endpoint made through the API has {@link Destinations} to obey on every connection: its host is resolved here,
 * on a worker (never on the event loop), each address checked, and the request sent to the checked address with the
 * URL's host as Host header and TLS SNI, so that Vert.x resolves nothing again behind the check (a name that
 * resolves inside after the endpoint was made is refused: the attempt fails and says why).
 */
final class Sender {
  /** How much of a refusal's body is kept for the operator (the rest is read and dropped). */
  private static final int KEPT_BODY = 200;

  /** How an attempt ended: the status (null if none came), or what went wrong; a Retry-After the receiver gave. */
  record Outcome(Integer status, String error, Duration retryAfter, long nanos) {
    boolean delivered() {
      return status != null && status >= 200 && status < 300;
    }
  }

  private final Vertx vertx;
  private final String url;
  private final Duration timeout;
  private final HttpClientAgent client;
  /** Null for an endpoint of the configuration file (the operator's): its URL is used as it is. */
  private final Destinations destinations;

  Sender(Vertx vertx, String name, String url, Duration timeout, int concurrency) {
    this(vertx, name, url, timeout, concurrency, null);
  }

  Sender(Vertx vertx, String name, String url, Duration timeout, int concurrency, Destinations destinations) {
    this.vertx = vertx;
    this.url = url;
    this.timeout = timeout;
    this.destinations = destinations;
    this.client = vertx.createHttpClient(new HttpClientOptions()
            .setName("ledgerpost-webhook-" + name)
            .setForceSni(true) // the URL's host, also when the connection goes to an address checked here
            .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()))
            .setKeepAlive(true)
            .setMaxRedirects(0),
        new PoolOptions().setHttp1MaxSize(concurrency));
  }

  Future<Outcome> post(String id, long timestamp, String signature, String body) {
    long start = System.nanoTime();
    if (destinations == null) {
      return post(id, timestamp, signature, body, null, start);
    }
    URI u = URI.create(url);
    String host = u.getHost().startsWith("[") ? u.getHost().substring(1, u.getHost().length() - 1) : u.getHost();
    int port = u.getPort() > 0 ? u.getPort() : "https".equalsIgnoreCase(u.getScheme()) ? 443 : 80;
    // The resolution counts against webhooks.timeout too, so the attempt still ends within its lease.
    Promise<InetAddress[]> resolved = Promise.promise();
    long timer = vertx.setTimer(timeout.toMillis(), t -> resolved.tryFail("no answer from DNS within " + timeout.toMillis()
        + " ms (webhooks.timeout)"));
    vertx.executeBlocking(() -> InetAddress.getAllByName(host), false).onComplete(resolved::tryComplete, resolved::tryFail);
    return resolved.future().onComplete(x -> vertx.cancelTimer(timer)).transform(ar -> {
      if (ar.failed()) {
        return Future.succeededFuture(new Outcome(null, "cannot resolve '" + host + "': " + ar.cause().getMessage(), null,
            System.nanoTime() - start));
      }
      for (InetAddress a : ar.result()) {
        String problem = destinations.addressProblem(host, a);
        if (problem != null) {
          return Future.succeededFuture(new Outcome(null, problem, null, System.nanoTime() - start));
        }
      }
      SocketAddress checked = SocketAddress.inetSocketAddress(port, ar.result()[0].getHostAddress());
      return post(id, timestamp, signature, body, checked, start);
    });
  }

  /**
   * {@code server}: the checked address to connect to, or null to let Vert.x resolve the URL's host. The attempt's
   * timer counts from {@code start}, so a resolution before it is part of webhooks.timeout.
   */
  private Future<Outcome> post(String id, long timestamp, String signature, String body, SocketAddress server, long start) {
    long budget = Math.max(1, timeout.toMillis() - (System.nanoTime() - start) / 1_000_000);
    Promise<Outcome> done = Promise.promise();
    HttpClientRequest[] request = new HttpClientRequest[1];
    Integer[] status = new Integer[1];
    long timer = vertx.setTimer(budget, t -> {
      // A status already received counts (the receiver answered); only the rest of its body was late.
      String error = status[0] != null ? null : "no answer within " + timeout.toMillis() + " ms (webhooks.timeout)";
      done.tryComplete(new Outcome(status[0], error, null, System.nanoTime() - start));
      if (request[0] != null) {
        request[0].reset();
      }
    });
    RequestOptions options = new RequestOptions()
        .setMethod(HttpMethod.POST)
        .setAbsoluteURI(url)
        .setFollowRedirects(false)
        .setConnectTimeout(budget)
        .putHeader("content-type", "application/json")
        .putHeader("user-agent", "Ledgerpost-Webhooks/1")
        .putHeader("webhook-id", id)
        .putHeader("webhook-timestamp", Long.toString(timestamp))
        .putHeader("webhook-signature", signature);
    if (server != null) {
      options.setServer(server);
    }
    client.request(options).onComplete(ar -> {
      if (ar.failed()) {
        done.tryComplete(new Outcome(null, describe(ar.cause()), null, System.nanoTime() - start));
        return;
      }
      HttpClientRequest r = ar.result();
      if (done.future().isComplete()) {
        r.reset();
        return;
      }
      request[0] = r;
      r.send(Buffer.buffer(body)).onComplete(sent -> {
        if (sent.failed()) {
          done.tryComplete(new Outcome(null, describe(sent.cause()), null, System.nanoTime() - start));
          return;
        }
        var response = sent.result();
        status[0] = response.statusCode();
        Duration retryAfter = retryAfter(response.statusCode(), response.getHeader("retry-after"));
        // Bytes, decoded once at the end: a chunk's length is in bytes, not characters (a non-ASCII body threw here,
        // issue 26), and a character may be split between two chunks.
        Buffer kept = Buffer.buffer();
        long[] received = {0};
        response.handler(chunk -> {
          received[0] += chunk.length();
          if (kept.length() < KEPT_BODY) {
            kept.appendBuffer(chunk, 0, Math.min(chunk.length(), KEPT_BODY - kept.length()));
          }
        });
        response.exceptionHandler(e -> done.tryComplete(new Outcome(status[0], null, retryAfter, System.nanoTime() - start)));
        response.endHandler(v -> {
          int code = response.statusCode();
          String error = code >= 200 && code < 300 ? null
              : code >= 300 && code < 400 ? redirect(code, response.getHeader("location"))
              : refusal(code, response.statusMessage(), kept.toString(java.nio.charset.StandardCharsets.UTF_8),
                  received[0] >= KEPT_BODY);
          done.tryComplete(new Outcome(code, error, retryAfter, System.nanoTime() - start));
        });
      });
    });
    return done.future().onComplete(x -> vertx.cancelTimer(timer));
  }

  /**
   * Why a 3xx failed the attempt: redirects are never followed (a receiver could point the gateway at an internal
   * address, SSRF), so the operator reads where it pointed: the Location's host only, never its path or query, which
   * may carry anything.
   */
  static String redirect(int code, String location) {
    String host = null;
    try {
      host = location == null ? null : URI.create(location.trim()).getHost();
    } catch (IllegalArgumentException e) {
      // an unparsable Location is named as such
    }
    String to = host != null ? " to host " + host : location == null ? " without a Location" : " to a relative or unreadable Location";
    return "HTTP " + code + " redirect" + to + " not followed: a webhook is sent to its endpoint's URL only";
  }

  /**
   * "HTTP 500 Internal Server Error: <the start of its body>", printable ASCII only, in whole words: a body cut at
   * {@link #KEPT_BODY} can end inside an address, and a piece of an address is what an erasure cannot find
   * (docs/design.md §8.6), so the word the cut went through goes too; and a word with a character outside printable
   * ASCII goes whole rather than in pieces ({@code jöhn@example.com} would leave {@code hn@example.com}).
   */
  static String refusal(int code, String reason, String body) {
    return refusal(code, reason, body.length() > KEPT_BODY ? body.substring(0, KEPT_BODY) : body, body.length() >= KEPT_BODY);
  }

  /**
   * The same for a body already cut to its start ({@code cut}: the receiver sent more than that, or exactly that
   * much, so the last word may be a piece). The cut is in bytes, so the kept text may be shorter than
   * {@link #KEPT_BODY} characters: whether it was cut is said, not guessed from its length.
   */
  static String refusal(int code, String reason, String kept, boolean cut) {
    String text = cut ? kept.substring(0, wordEnd(kept)) : kept;
    text = text.replaceAll("[\\t\\r\\n]", " ").replaceAll("[^\\s<>(),;:{}]*[^\\x20-\\x7E][^\\s<>(),;:{}]*", "?").trim();
    return "HTTP " + code + (reason == null || reason.isEmpty() ? "" : " " + reason) + (text.isEmpty() ? "" : ": " + text);
  }

  /**
   * Where the last whole word of a cut text ends: before the last character that cannot be inside an address (a
   * space, a bracket, a comma...), and before a quote left open there (a quoted local part may hold a space).
   */
  private static int wordEnd(String text) {
    int end = text.length();
    while (end > 0 && " \t\r\n<>(),;:{}".indexOf(text.charAt(end - 1)) < 0) {
      end--;
    }
    if (text.substring(0, end).chars().filter(c -> c == '"').count() % 2 == 1) {
      end = text.lastIndexOf('"', end - 1);
    }
    return end;
  }

  /**
   * The exception, and the innermost cause when it says more: a failed TLS handshake comes as "SSLHandshakeException:
   * Failed to create SSL connection" whatever went wrong, and only its cause says why (a certificate for another name,
   * an issuer not trusted), which is what the operator reads in the delivery's last error.
   */
  static String describe(Throwable e) {
    String m = e.getMessage();
    String text = e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    Throwable root = e;
    for (int depth = 0; root.getCause() != null && root.getCause() != root && depth < 16; depth++) {
      root = root.getCause();
    }
    String why = root.getMessage();
    if (root != e && why != null && !why.isBlank() && (m == null || !m.contains(why))) {
      text += " (" + root.getClass().getSimpleName() + ": " + why + ")";
    }
    return text;
  }

  /** A receiver's Retry-After on 429 or 503, in seconds or as an HTTP date; null when absent or unreadable. */
  static Duration retryAfter(int status, String header) {
    if ((status != 429 && status != 503) || header == null || header.isBlank()) {
      return null;
    }
    String h = header.trim();
    try {
      long seconds = Long.parseLong(h);
      return seconds < 0 ? null : Duration.ofSeconds(seconds);
    } catch (NumberFormatException e) {
      try {
        Duration d = Duration.between(java.time.Instant.now(), ZonedDateTime.parse(h, DateTimeFormatter.RFC_1123_DATE_TIME));
        return d.isNegative() ? Duration.ZERO : d;
      } catch (DateTimeParseException x) {
        return null;
      }
    }
  }

  Future<Void> close() {
    return client.close();
  }
}
