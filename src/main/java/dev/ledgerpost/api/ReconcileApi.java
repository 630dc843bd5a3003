package dev.ledgerpost.api;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.ledger.ReconcileMessages;
import dev.ledgerpost.ledger.ReconcileMessages.Accept;
import dev.ledgerpost.ledger.ReconcileMessages.Accepted;
import dev.ledgerpost.ledger.ReconcileMessages.ProposalConflict;
import dev.ledgerpost.ledger.ReconcileMessages.ProposalPage;
import dev.ledgerpost.ledger.ReconcileMessages.ProposalQuery;
import dev.ledgerpost.ledger.ReconcileMessages.ProposalState;
import dev.ledgerpost.ledger.ReconcileMessages.ProposalView;
import dev.ledgerpost.ledger.ReconcileMessages.Reject;
import dev.ledgerpost.ledger.StateConflict;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.Locale;
import java.util.UUID;

/**
 * Reconcile proposals for operators (docs/design.md §8.4): list them, accept one (which resolves its message through
 * the resolution path of §8.2, named as the operator's, the note naming the proposal) or reject one (never proposed
 * again). Nothing here sends mail.
 */
final class ReconcileApi {
  private static final int MAX_NOTE = 2000;
  private static final int MAX_LIMIT = 500;

  private final Bus bus;

  ReconcileApi(Bus bus) {
    this.bus = bus;
  }

  void mount(Router router) {
    router.get("/api/v1/reconcile/proposals").handler(this::list);
    router.post("/api/v1/reconcile/proposals/:id/accept").handler(this::accept);
    router.post("/api/v1/reconcile/proposals/:id/reject").handler(this::reject);
  }

  private void list(RoutingContext ctx) {
    ProposalQuery query;
    try {
      query = query(ctx);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(ReconcileMessages.LIST, query, ProposalPage.class).onComplete(ar -> {
      if (ar.failed()) {
        Problem.ledgerFailure(ctx, ar.cause());
        return;
      }
      JsonArray items = new JsonArray();
      ar.result().items().forEach(p -> items.add(json(p)));
      Problem.json(ctx, 200, new JsonObject().put("items", items)
          .put("next", ar.result().next() == null ? null : String.valueOf(ar.result().next())));
    });
  }

  private static ProposalQuery query(RoutingContext ctx) {
    ProposalState state = null;
    String s = ctx.queryParams().get("state");
    if (s != null && !s.isEmpty()) {
      try {
        state = ProposalState.valueOf(s.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("state must be one of " + java.util.Arrays.toString(ProposalState.values()));
      }
    }
    UUID message = null;
    String m = ctx.queryParams().get("message");
    if (m != null && !m.isEmpty()) {
      try {
        message = UUID.fromString(m);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("message must be a ledger id (a UUID)");
      }
    }
    int limit = 50;
    String l = ctx.queryParams().get("limit");
    if (l != null && !l.isEmpty()) {
      try {
        limit = Integer.parseInt(l);
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > MAX_LIMIT) {
        throw new IllegalArgumentException("limit must be a whole number from 1 to " + MAX_LIMIT);
      }
    }
    Long before = null;
    String c = ctx.queryParams().get("cursor");
    if (c != null && !c.isEmpty()) {
      try {
        before = Long.parseLong(c);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("cursor is not one this server issued");
      }
    }
    return new ProposalQuery(state, message, before, limit);
  }

  private void accept(RoutingContext ctx) {
    long id;
    String operator;
    String note;
    try {
      id = proposalId(ctx);
      JsonObject body = body(ctx);
      operator = OperatorApi.operator(ctx, body);
      note = note(body);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(ReconcileMessages.ACCEPT, new Accept(id, operator, note), Accepted.class).onComplete(ar -> {
      if (ar.failed()) {
        failure(ctx, ar.cause());
        return;
      }
      Accepted a = ar.result();
      Problem.json(ctx, 200, new JsonObject()
          .put("proposal", json(a.proposal()))
          .put("message", new JsonObject()
              .put("id", a.resolved().id().toString())
              .put("status", a.resolved().status().name())
              .put("version", a.resolved().version())
              .put("previousStatus", a.resolved().previousStatus().name())
              .put("resolution", new JsonObject()
                  .put("outcome", a.resolved().outcome().name())
                  .put("operator", a.resolved().operator())
                  .put("note", a.resolved().note())
                  .put("resolvedAt", a.resolved().resolvedAt().toString()))));
    });
  }

  private void reject(RoutingContext ctx) {
    long id;
    String operator;
    String note;
    try {
      id = proposalId(ctx);
      JsonObject body = body(ctx);
      operator = OperatorApi.operator(ctx, body);
      note = note(body);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(ReconcileMessages.REJECT, new Reject(id, operator, note), ProposalView.class).onComplete(ar -> {
      if (ar.failed()) {
        failure(ctx, ar.cause());
        return;
      }
      Problem.json(ctx, 200, new JsonObject().put("proposal", json(ar.result())));
    });
  }

  private static long proposalId(RoutingContext ctx) {
    try {
      long id = Long.parseLong(ctx.pathParam("id"));
      if (id < 1) {
        throw new NumberFormatException();
      }
      return id;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("proposal id must be a positive whole number");
    }
  }

  /** An empty body is an empty object: the operator may come in the X-Operator header alone. */
  private static JsonObject body(RoutingContext ctx) {
    String text = ctx.body() == null ? null : ctx.body().asString();
    if (text == null || text.isBlank()) {
      return new JsonObject();
    }
    Object parsed;
    try {
      parsed = Json.decodeValue(text);
    } catch (DecodeException e) {
      parsed = null;
    }
    if (!(parsed instanceof JsonObject o)) {
      throw new IllegalArgumentException("the body must be a JSON object: {\"operator\": \"...\", \"note\": \"...\"}");
    }
    return o;
  }

  private static String note(JsonObject body) {
    String note = OperatorApi.text(body, "note");
    if (note != null && note.length() > MAX_NOTE) {
      throw new IllegalArgumentException("note is longer than " + MAX_NOTE + " characters");
    }
    return note == null || note.isBlank() ? null : note;
  }

  private static void failure(RoutingContext ctx, Throwable e) {
    if (e instanceof ProposalConflict c) {
      Problem.send(ctx, 409, "Conflict", e.getMessage(), new JsonObject().put("proposalState", c.state().name()));
      return;
    }
    if (e instanceof StateConflict c) {
      Problem.send(ctx, 409, "Conflict", e.getMessage() + "; the proposal is superseded",
          new JsonObject().put("proposalState", ProposalState.SUPERSEDED.name()).put("messageStatus", c.current().name())
              .put("messageVersion", c.version()));
      return;
    }
    Problem.ledgerFailure(ctx, e);
  }

  /** A proposal as the API shows it (here, in the message detail and in the operation status). */
  static JsonObject json(ProposalView p) {
    return new JsonObject()
        .put("id", p.id())
        .put("message", p.messageId().toString())
        .put("messageVersion", p.messageVersion())
        .put("outcome", p.outcome().name())
        .put("confidence", p.confidence().label())
        .put("source", p.source())
        .put("evidenceRef", p.evidenceRef())
        .put("evidence", p.evidence())
        .put("state", p.state().name())
        .put("proposedAt", p.proposedAt().toString())
        .put("proposedBy", p.proposedBy())
        .put("decidedAt", p.decidedAt() == null ? null : p.decidedAt().toString())
        .put("decidedBy", p.decidedBy())
        .put("decisionNote", p.decisionNote());
  }
}
