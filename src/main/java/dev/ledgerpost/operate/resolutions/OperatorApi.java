package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.operate.resolutions.MessageJson;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.resolutions.OperatorMessages;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolve;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolved;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.operate.stale.StaleMessages;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRow;
import dev.ledgerpost.operate.stale.StaleMessages.StaleList;
import dev.ledgerpost.operate.stale.StaleMessages.StaleListQuery;
import dev.ledgerpost.operate.stale.StaleMessages.StaleRow;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.UUID;

/**
 * The operator's endpoints: the stale list, and manual resolution of a PENDING or UNKNOWN message.
 * Only an operator resolves; the request names who, and the ledger records who, when and why.
 */
public record OperatorApi(Bus bus) {

  public void mount(Router router) {
    router.get("/api/v1/messages/stale").handler(this::stale);
    router.post("/api/v1/messages/:id/resolution").handler(this::resolve);
  }

  private void stale(RoutingContext ctx) {
    int limit = Input.of(ctx).number("limit").intValue();
    Problem.answer(ctx, bus.request(StaleMessages.LIST, new StaleListQuery(limit), StaleList.class), OperatorApi::staleList);
  }

  private static JsonObject staleList(StaleList list) {
    JsonArray items = new JsonArray();
    for (StaleRow r : list.rows()) {
      // A stale row is a PENDING open row: shown as the attention list shows one.
      items.add(AttentionApi.item(new OpenRow(r.id(), MessageStatus.PENDING, r.version(), r.messageIdHeader(), r.mailFrom(),
          r.receivedAt(), r.raises(), r.lastRaisedAt(), r.clientsWaiting()), list.asOf()));
    }
    return new JsonObject()
        .put("asOf", list.asOf().toString())
        .put("thresholdSeconds", list.threshold().toSeconds())
        .put("pending", list.pending())
        .put("stale", list.stale())
        .put("items", items);
  }

  private void resolve(RoutingContext ctx) {
    Resolve request;
    try {
      request = resolveRequest(Input.of(ctx));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(OperatorMessages.RESOLVE, request, Resolved.class), OperatorApi::resolved);
  }

  /** A resolved message as the API shows it (here, and in an accepted reconcile proposal's answer). */
  public static JsonObject resolved(Resolved r) {
    return MessageJson.message(r.id(), r.status(), r.version())
        .put("previousStatus", r.previousStatus().name())
        .put("resolution", new JsonObject()
            .put("outcome", r.outcome().name())
            .put("operator", r.operator())
            .put("note", r.note())
            .put("resolvedAt", r.resolvedAt().toString()));
  }

  /** The contract has checked the types, the outcome, the lengths and the unknown members; here is what it cannot say. */
  private static Resolve resolveRequest(Input in) {
    JsonObject body = in.body();
    return new Resolve(UUID.fromString(in.path("id")), ResolutionOutcome.valueOf(body.getString("outcome")), Operator.name(in, body),
        Operator.note(body), body.getInteger("version"));
  }
}
