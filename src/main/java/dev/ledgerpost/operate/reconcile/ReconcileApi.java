package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.operate.resolutions.OperatorApi;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.operate.reconcile.ReconcileMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accept;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accepted;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalConflict;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalPage;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalState;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Reject;
import dev.ledgerpost.platform.db.StateConflict;
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
public record ReconcileApi(Bus bus) {
  public void mount(Router router) {
    router.get("/api/v1/reconcile/proposals").handler(this::list);
    router.post("/api/v1/reconcile/proposals/:id/accept").handler(this::accept);
    router.post("/api/v1/reconcile/proposals/:id/reject").handler(this::reject);
  }

  /** The contract has checked the state, the message id, the limit and the cursor's form. */
  private void list(RoutingContext ctx) {
    Input in = Input.of(ctx);
    String state = in.string("state");
    String message = in.string("message");
    String cursor = in.string("cursor");
    ProposalQuery query = new ProposalQuery(state == null ? null : ProposalState.valueOf(state.toUpperCase(Locale.ROOT)),
        message == null ? null : UUID.fromString(message), cursor == null ? null : Long.valueOf(cursor),
        in.number("limit").intValue());
    Problem.answer(ctx, bus.request(ReconcileMessages.LIST, query, ProposalPage.class), page -> {
      JsonArray items = new JsonArray();
      page.items().forEach(p -> items.add(ProposalJson.of(p)));
      return new JsonObject().put("items", items).put("next", page.next() == null ? null : String.valueOf(page.next()));
    });
  }

  private void accept(RoutingContext ctx) {
    Decision d = decision(ctx);
    if (d != null) {
      Problem.answer(ctx, bus.request(ReconcileMessages.ACCEPT, new Accept(d.id(), d.operator(), d.note()), Accepted.class), 200,
          a -> new JsonObject().put("proposal", ProposalJson.of(a.proposal())).put("message", OperatorApi.resolved(a.resolved())),
          ReconcileApi::failure);
    }
  }

  private void reject(RoutingContext ctx) {
    Decision d = decision(ctx);
    if (d != null) {
      Problem.answer(ctx, bus.request(ReconcileMessages.REJECT, new Reject(d.id(), d.operator(), d.note()), ProposalView.class),
          200, p -> new JsonObject().put("proposal", ProposalJson.of(p)), ReconcileApi::failure);
    }
  }

  private record Decision(long id, String operator, String note) {}

  /**
   * Accept's and reject's input: the contract bounds the id, the note and the members; a body left out is an empty
   * object (the operator may come in the X-Operator header alone). Null once a 400 has been answered.
   */
  private static Decision decision(RoutingContext ctx) {
    Input in = Input.of(ctx);
    JsonObject body = in.body() == null ? new JsonObject() : in.body();
    try {
      String note = body.getString("note");
      return new Decision(in.pathNumber("id"), Operator.name(in, body),
          note == null || note.isBlank() ? null : note);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return null;
    }
  }

  private static void failure(RoutingContext ctx, Throwable e) {
    if (e instanceof ProposalConflict c) {
      Problem.send(ctx, 409, "Conflict", e.getMessage(), new JsonObject().put("proposalState", c.state().name()));
      return;
    }
    if (e instanceof StateConflict c) {
      Problem.send(ctx, 409, "Conflict", e.getMessage() + "; the proposal is superseded",
          new JsonObject().put("proposalState", ProposalState.SUPERSEDED.name()).put("messageStatus", c.current())
              .put("messageVersion", c.version()));
      return;
    }
    Problem.ledgerFailure(ctx, e);
  }
}
