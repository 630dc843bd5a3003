package dev.ledgerpost.api;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** RFC 9457 problem details: every error of the HTTP API is one of these. */
final class Problem {
  private Problem() {}

  static void send(RoutingContext ctx, int status, String title, String detail) {
    JsonObject body = new JsonObject()
        .put("type", "about:blank")
        .put("title", title)
        .put("status", status);
    if (detail != null) {
      body.put("detail", detail);
    }
    body.put("instance", ctx.request().path());
    if (!ctx.response().ended() && !ctx.response().headWritten()) {
      ctx.response()
          .setStatusCode(status)
          .putHeader("Content-Type", "application/problem+json")
          .end(body.encode());
    }
  }
}
