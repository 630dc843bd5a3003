package dev.ledgerpost.api;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.ledger.OperatorMessages;
import dev.ledgerpost.ledger.OperatorMessages.Resolve;
import dev.ledgerpost.ledger.OperatorMessages.Resolved;
import dev.ledgerpost.ledger.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.ledger.OperatorMessages.StaleRow;
import dev.ledgerpost.ledger.StateConflict;
import dev.ledgerpost.stale.StaleMessages;
import dev.ledgerpost.stale.StaleMessages.StaleList;
import dev.ledgerpost.stale.StaleMessages.StaleListQuery;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.time.Duration;
import java.util.UUID;

/**
 * The operator's endpoints: the stale list, and manual resolution of a PENDING or UNKNOWN message.
 * Only an operator resolves; the request names who, and the ledger records who, when and why.
 */
final class OperatorApi {
  static final String OPERATOR_HEADER = "X-Operator";
  private static final int MAX_NOTE = 2000;
  private static final int MAX_OPERATOR = 200;
  private static final int MAX_LIMIT = 500;

  private final Bus bus;

  OperatorApi(Bus bus) {
    this.bus = bus;
  }

  void mount(Router router) {
    router.get("/api/v1/messages/stale").handler(this::stale);
    router.post("/api/v1/messages/:id/resolution").handler(BodyHandler.create().setBodyLimit(64 * 1024)).handler(this::resolve);
  }

  private void stale(RoutingContext ctx) {
    int limit = 100;
    String limitText = ctx.queryParams().get("limit");
    if (limitText != null && !limitText.isEmpty()) {
      try {
        limit = Integer.parseInt(limitText);
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > MAX_LIMIT) {
        Problem.send(ctx, 400, "Bad Request", "limit must be a whole number from 1 to " + MAX_LIMIT);
        return;
      }
    }
    bus.request(StaleMessages.LIST, new StaleListQuery(limit), StaleList.class).onComplete(ar -> {
      if (ar.failed()) {
        failure(ctx, ar.cause());
        return;
      }
      StaleList list = ar.result();
      JsonArray items = new JsonArray();
      for (StaleRow r : list.rows()) {
        items.add(new JsonObject()
            .put("id", r.id().toString())
            .put("status", "PENDING")
            .put("version", r.version())
            .put("messageId", r.messageIdHeader())
            .put("mailFrom", r.mailFrom())
            .put("receivedAt", r.receivedAt().toString())
            .put("ageSeconds", Math.max(0, Duration.between(r.receivedAt(), list.asOf()).toSeconds()))
            .put("staleRaises", r.raises())
            .put("lastRaisedAt", r.lastRaisedAt() == null ? null : r.lastRaisedAt().toString()));
      }
      Problem.json(ctx, 200, new JsonObject()
          .put("asOf", list.asOf().toString())
          .put("thresholdSeconds", list.threshold().toSeconds())
          .put("pending", list.pending())
          .put("stale", list.stale())
          .put("items", items));
    });
  }

  private void resolve(RoutingContext ctx) {
    Resolve request;
    try {
      request = resolveRequest(ctx);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(OperatorMessages.RESOLVE, request, Resolved.class).onComplete(ar -> {
      if (ar.failed()) {
        failure(ctx, ar.cause());
        return;
      }
      Resolved r = ar.result();
      Problem.json(ctx, 200, new JsonObject()
          .put("id", r.id().toString())
          .put("status", r.status().name())
          .put("version", r.version())
          .put("previousStatus", r.previousStatus().name())
          .put("resolution", new JsonObject()
              .put("outcome", r.outcome().name())
              .put("operator", r.operator())
              .put("note", r.note())
              .put("resolvedAt", r.resolvedAt().toString())));
    });
  }

  private static Resolve resolveRequest(RoutingContext ctx) {
    UUID id;
    try {
      id = UUID.fromString(ctx.pathParam("id"));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("message id must be a UUID");
    }
    JsonObject body = body(ctx, "{\"outcome\": \"DELIVERED\" | \"NOT_DELIVERED\", \"note\": \"...\"}");
    ResolutionOutcome outcome = outcome(body);
    String note = note(body);
    String operator = operator(ctx, body);
    Integer version = null;
    if (body.containsKey("version")) {
      if (!(body.getValue("version") instanceof Integer v) || v < 1) {
        throw new IllegalArgumentException("version, when given, must be the message's current version (a whole number)");
      }
      version = v;
    }
    return new Resolve(id, outcome, operator, note, version);
  }

  static ResolutionOutcome outcome(JsonObject body) {
    try {
      return ResolutionOutcome.valueOf(text(body, "outcome"));
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new IllegalArgumentException("outcome must be DELIVERED or NOT_DELIVERED");
    }
  }

  static String note(JsonObject body) {
    String note = text(body, "note");
    if (note == null || note.isBlank()) {
      throw new IllegalArgumentException("note is required: say why (what the downstream's log or the recipient showed)");
    }
    if (note.length() > MAX_NOTE) {
      throw new IllegalArgumentException("note is longer than " + MAX_NOTE + " characters");
    }
    return note;
  }

  /** Who resolves: the X-Operator header or the body's operator field (both must agree when both are given). */
  static String operator(RoutingContext ctx, JsonObject body) {
    String header = ctx.request().getHeader(OPERATOR_HEADER);
    String field = text(body, "operator");
    if (header != null && field != null && !header.trim().equals(field.trim())) {
      throw new IllegalArgumentException("the " + OPERATOR_HEADER + " header and the operator field name different operators");
    }
    String operator = header != null ? header.trim() : field == null ? null : field.trim();
    if (operator == null || operator.isEmpty()) {
      throw new IllegalArgumentException("the operator is required: an " + OPERATOR_HEADER + " header or an operator field");
    }
    if (operator.length() > MAX_OPERATOR || operator.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException("operator must be a name of at most " + MAX_OPERATOR + " printable characters");
    }
    return operator;
  }

  /** The body as a JSON object, or a 400's detail naming the shape expected. */
  static JsonObject body(RoutingContext ctx, String expected) {
    Object parsed;
    try {
      String text = ctx.body().asString();
      parsed = text == null || text.isBlank() ? null : Json.decodeValue(text);
    } catch (DecodeException e) {
      parsed = null;
    }
    if (!(parsed instanceof JsonObject body)) {
      throw new IllegalArgumentException("the body must be a JSON object: " + expected);
    }
    return body;
  }

  static String text(JsonObject body, String key) {
    Object v = body.getValue(key);
    if (v != null && !(v instanceof String)) {
      throw new IllegalArgumentException(key + " must be a string");
    }
    return (String) v;
  }

  static void failure(RoutingContext ctx, Throwable e) {
    if (e instanceof StateConflict c) {
      Problem.send(ctx, 409, "Conflict", e.getMessage(),
          new JsonObject().put("messageStatus", c.current().name()).put("messageVersion", c.version()));
      return;
    }
    Problem.ledgerFailure(ctx, e);
  }

}
