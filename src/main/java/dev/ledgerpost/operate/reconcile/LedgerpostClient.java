package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * A downstream Ledgerpost's API as one {@code reconcile.sources} entry of type {@code ledgerpost} names it: its url and
 * admin token, asked with GET for JSON. Shared by the reconcile job's evidence ({@link LedgerpostSource}, docs/design.md
 * §8.4) and tracking's downstream facts (docs/design.md §8.13, "Downstream Ledgerpost"), so both read one configuration
 * the same way. A failure is a {@link Failure} whose {@link Failure#kind} says what went wrong, for the log and the
 * metrics of the reader.
 */
public final class LedgerpostClient {
  private static final long TIMEOUT_MILLIS = 10_000;

  /** What went wrong with one request: nobody answered, the token was refused, no such row, another status, not JSON. */
  public enum Kind {
    UNREACHABLE, UNAUTHORIZED, NOT_FOUND, STATUS, MALFORMED;

    /** As the log and the metrics' {@code kind} tag show it: {@code not-found}. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
  }

  /** A request that gave no JSON object; {@link #kind} for the reader's counting. */
  public static final class Failure extends IllegalStateException {
    private final Kind kind;

    Failure(Kind kind, String message) {
      super(message);
      this.kind = kind;
    }

    public Kind kind() {
      return kind;
    }

    /** As the reconcile job's warning shows a source's failure: what was asked, what came, and the kind. */
    @Override
    public String toString() {
      return getMessage() + " (" + kind.label() + ")";
    }
  }

  private final GatewayConfig.ReconcileSource config;
  private final HttpClientAgent client;

  public LedgerpostClient(Vertx vertx, GatewayConfig.ReconcileSource config) {
    this.config = config;
    this.client = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout((int) TIMEOUT_MILLIS),
        new PoolOptions().setHttp1MaxSize(2));
  }

  /** The source's name ({@code reconcile.sources}' {@code name}). */
  public String name() {
    return config.name();
  }

  /** Its API's base url, without a trailing slash. */
  public String url() {
    return config.url();
  }

  /** {@code GET path} (from {@code /api/v1/...}) with the admin token; the answer's JSON object, or a {@link Failure}. */
  public Future<JsonObject> get(String path) {
    RequestOptions options = new RequestOptions()
        .setMethod(HttpMethod.GET)
        .setAbsoluteURI(config.url() + path)
        .setTimeout(TIMEOUT_MILLIS)
        .putHeader("Authorization", "Bearer " + config.token())
        .putHeader("Accept", "application/json");
    return client.request(options)
        .compose(req -> req.send())
        .recover(e -> Future.failedFuture(new Failure(Kind.UNREACHABLE, "GET " + path + ": " + e.getMessage())))
        .compose(resp -> resp.body()
            .recover(e -> Future.failedFuture(new Failure(Kind.UNREACHABLE, "GET " + path + ": " + e.getMessage())))
            .compose(body -> {
              if (resp.statusCode() != 200) {
                Kind kind = switch (resp.statusCode()) {
                  case 401, 403 -> Kind.UNAUTHORIZED;
                  case 404 -> Kind.NOT_FOUND;
                  default -> Kind.STATUS;
                };
                return Future.failedFuture(new Failure(kind, "GET " + path + " answered " + resp.statusCode() + ": "
                    + abbreviate(body.toString())));
              }
              try {
                return Future.succeededFuture(new JsonObject(body));
              } catch (DecodeException | ClassCastException e) {
                return Future.failedFuture(new Failure(Kind.MALFORMED, "GET " + path + " did not answer a JSON object"));
              }
            }));
  }

  public Future<Void> close() {
    return client.close();
  }

  public static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static String abbreviate(String s) {
    return s.length() > 200 ? s.substring(0, 200) + "..." : s;
  }
}
