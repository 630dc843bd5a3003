package dev.ledgerpost.platform.web;

import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.StateConflict;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.function.BiConsumer;
import java.util.function.Function;

/** RFC 9457 problem details: every error of the HTTP API (the WebSocket hub's upgrade's too) is one of these. */
public final class Problem {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Problem.class);

  private Problem() {}

  public static void send(RoutingContext ctx, int status, String title, String detail) {
    send(ctx, status, title, detail, null);
  }

  /** With extension members (RFC 9457 §3.2), e.g. the message's current status on a 409. */
  public static void send(RoutingContext ctx, int status, String title, String detail, JsonObject extensions) {
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

  /** 401 with the challenge of {@code realm}: the token is missing, or not one this gateway knows. */
  public static void unauthorized(RoutingContext ctx, String realm, String detail) {
    ctx.response().putHeader("WWW-Authenticate", "Bearer realm=\"" + realm + "\"");
    send(ctx, 401, "Unauthorized", detail);
  }

  /** 200 with {@code body} of the answer, or the ledger's failure as a problem. */
  public static <T> void answer(RoutingContext ctx, Future<T> answer, Function<T, JsonObject> body) {
    answer(ctx, answer, 200, body, Problem::ledgerFailure);
  }

  /** {@code status} with {@code body} of the answer, or its failure as {@code failure} maps it to a problem. */
  public static <T> void answer(RoutingContext ctx, Future<T> answer, int status, Function<T, JsonObject> body,
      BiConsumer<RoutingContext, Throwable> failure) {
    answer.onComplete(ar -> {
      if (ar.succeeded()) {
        json(ctx, status, body.apply(ar.result()));
      } else {
        failure.accept(ctx, ar.cause());
      }
    });
  }

  /**
   * The one mapping of a ledger failure to an HTTP problem (a state conflict is 409 with the message's status and
   * version); anything unexpected is logged and answered 503.
   */
  public static void ledgerFailure(RoutingContext ctx, Throwable e) {
    if (e instanceof StateConflict c) {
      send(ctx, 409, "Conflict", e.getMessage(),
          new JsonObject().put("messageStatus", c.current()).put("messageVersion", c.version()));
      return;
    }
    if (e instanceof StoreException le) {
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
  public static void json(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body.encode());
  }
}
