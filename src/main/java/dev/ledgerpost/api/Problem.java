package dev.ledgerpost.api;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** RFC 9457 problem details: every error of the HTTP API is one of these. */
final class Problem {
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
}
