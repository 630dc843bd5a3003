package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.operate.resolutions.OperatorMessages;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRow;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolve;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolved;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.platform.db.StateConflict;
import dev.ledgerpost.operate.stale.StaleMessages;
import dev.ledgerpost.operate.stale.StaleMessages.Attention;
import dev.ledgerpost.operate.stale.StaleMessages.AttentionQuery;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.List;

/**
 * {@code POST /api/v1/resolutions} (docs/design.md §8.3): every message {@code GET /api/v1/attention} lists for a
 * filter, resolved with one outcome and note. Each message goes through the single resolution's path on its own
 * ({@code resolutions.resolve}: its own transaction, {@code resolutions} row, outbox event and audit line), at the
 * version it had when selected, so a message that changed meanwhile is reported as a conflict, never overwritten.
 * The caller states how many messages it expects (the count it previewed and the operator confirmed); when the
 * filter matches another number now, nothing is resolved.
 */
public final class BulkResolutions {
  /** One request resolves at most this many; a larger set is narrowed (by time) and resolved in parts. */
  static final int MAX_MESSAGES = 1000;
  /** Resolutions in flight at once: each is a short transaction, and the rest of the ledger's work goes on beside them. */
  private static final int PARALLEL = 4;

  private final Bus bus;

  public BulkResolutions(Bus bus) {
    this.bus = bus;
  }

  public void mount(Router router) {
    router.post("/api/v1/resolutions").handler(this::resolve);
  }

  private record Request(AttentionQuery filter, int expectedCount, ResolutionOutcome outcome, String note, String operator) {}

  private void resolve(RoutingContext ctx) {
    Request request;
    try {
      request = request(ctx);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(StaleMessages.ATTENTION, request.filter(), Attention.class).onComplete(ar -> {
      if (ar.failed()) {
        Problem.ledgerFailure(ctx, ar.cause());
        return;
      }
      Attention selected = ar.result();
      if (selected.matching() > MAX_MESSAGES) {
        Problem.send(ctx, 422, "Unprocessable Content", "the filter matches " + selected.matching() + " messages; one request "
            + "resolves at most " + MAX_MESSAGES + ": narrow the time range and resolve them in parts",
            new JsonObject().put("matching", selected.matching()));
        return;
      }
      if (selected.matching() != request.expectedCount()) {
        Problem.send(ctx, 409, "Conflict", "the filter matches " + selected.matching() + " messages now, not "
            + request.expectedCount() + ": preview again; nothing was resolved", new JsonObject().put("matching", selected.matching()));
        return;
      }
      resolveAll(selected.rows(), request).onComplete(done -> {
        JsonArray items = new JsonArray();
        int resolved = 0;
        int conflicts = 0;
        for (JsonObject item : done.result()) {
          items.add(item);
          switch (item.getString("result")) {
            case "RESOLVED" -> resolved++;
            case "CONFLICT" -> conflicts++;
            default -> { }
          }
        }
        Problem.json(ctx, 200, new JsonObject()
            .put("matched", selected.matching())
            .put("resolved", resolved)
            .put("conflicts", conflicts)
            .put("failed", selected.rows().size() - resolved - conflicts)
            .put("items", items));
      });
    });
  }

  /** Every row through resolutions.resolve, {@link #PARALLEL} at a time; one answer per row, in the rows' order. Never fails. */
  private Future<List<JsonObject>> resolveAll(List<OpenRow> rows, Request request) {
    JsonObject[] answers = new JsonObject[rows.size()];
    Promise<List<JsonObject>> all = Promise.promise();
    int[] next = {0};
    int[] open = {0};
    Runnable[] pump = new Runnable[1];
    pump[0] = () -> {
      while (open[0] < PARALLEL && next[0] < rows.size()) {
        int i = next[0]++;
        open[0]++;
        OpenRow row = rows.get(i);
        bus.request(OperatorMessages.RESOLVE, new Resolve(row.id(), request.outcome(), request.operator(), request.note(),
            row.version()), Resolved.class).onComplete(ar -> {
              answers[i] = answer(row, ar.succeeded() ? ar.result() : null, ar.cause());
              open[0]--;
              pump[0].run();
            });
      }
      if (open[0] == 0 && next[0] == rows.size()) {
        all.tryComplete(List.of(answers));
      }
    };
    pump[0].run();
    return all.future();
  }

  private static JsonObject answer(OpenRow row, Resolved r, Throwable failure) {
    JsonObject item = new JsonObject().put("id", row.id().toString());
    if (r != null) {
      return item.put("result", "RESOLVED").put("status", r.status().name()).put("version", r.version());
    }
    if (failure instanceof StateConflict c) {
      return item.put("result", "CONFLICT").put("status", c.current()).put("version", c.version())
          .put("detail", c.getMessage());
    }
    String detail = failure instanceof StoreException ? failure.getMessage() : "not resolved: " + failure.getMessage();
    return item.put("result", "FAILED").put("status", row.status().name()).put("version", row.version()).put("detail", detail);
  }

  /** The contract has checked the shape, the outcome, the filter's members and the limits. */
  private static Request request(RoutingContext ctx) {
    Input in = Input.of(ctx);
    JsonObject body = in.body();
    JsonObject filter = body.getJsonObject("filter");
    AttentionQuery query = AttentionApi.query(filter.getString("status"), filter.getString("sender"), filter.getString("since"),
        filter.getString("until"), MAX_MESSAGES);
    return new Request(query, body.getInteger("expectedCount"), ResolutionOutcome.valueOf(body.getString("outcome")),
        Operator.note(body), Operator.name(in, body));
  }
}
