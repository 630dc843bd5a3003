package dev.ledgerpost.api;

import dev.ledgerpost.ledger.LedgerException;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** RFC 9457 problem details: every error of the HTTP API is one of these. */
final class Problem {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Problem.class);

  private Problem() {}

  static void send(RoutingContext ctx, int status, String title, String detail) {
    send(ctx, status, title, detail, null);
  }

  /** With extension members (RFC 9457 §3.2), e.g. the message's current status on a 409. */
  static void send(RoutingContext ctx, int status, String title, String detail, JsonObject extensions) {
    JsonObject body = new JsonObject()
        .put("type", "about:blank")
        .put("title", title)
        .put("status", status);
    if (detail != null) {
      body.put("detail", detail);
    }
    body.put("instance", ctx.request().path());
    if (extensions != null) {
      extensions.forEach(e -> body.put(e.getKey(), e.getValue()));
    }
    if (!ctx.response().ended() && !ctx.response().headWritten()) {
      ctx.response()
          .setStatusCode(status)
          .putHeader("Content-Type", "application/problem+json")
          .end(body.encode());
    }
  }

  /** The one mapping of a ledger failure to an HTTP problem; anything unexpected is logged and answered 503. */
  static void ledgerFailure(RoutingContext ctx, Throwable e) {
    if (e instanceof LedgerException le) {
      switch (le.kind()) {
        case NOT_FOUND -> send(ctx, 404, "Not Found", le.getMessage());
        case BAD_REQUEST -> send(ctx, 400, "Bad Request", le.getMessage());
        default -> send(ctx, 503, "Service Unavailable", "ledger unavailable: " + le.getMessage());
      }
      return;
    }
    LOG.error("API request {} failed", ctx.request().path(), e);
    send(ctx, 503, "Service Unavailable", "ledger unavailable");
  }

  /** A plain JSON answer (not a problem); here so that every route writes its bodies the same way. */
  static void json(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body.encode());
  }
}
