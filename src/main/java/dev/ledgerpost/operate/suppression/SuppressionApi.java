package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Add;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.operate.suppression.SuppressionMessages.ListQuery;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Page;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Remove;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Source;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.platform.web.RecordJson;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.UUID;

/**
 * {@code /api/v1/suppressions} (docs/design.md §8.8), behind the admin token: list the entries (by address, by scope,
 * a page at a time), add one (an operator's: {@code source} operator), remove one by id or by address and scope. Who
 * asks is named as for a resolution (the X-Operator header or the body's operator).
 */
public record SuppressionApi(Bus bus) {
  public void mount(Router router) {
    router.get("/api/v1/suppressions").handler(this::list);
    router.post("/api/v1/suppressions").handler(this::add);
    router.delete("/api/v1/suppressions").handler(this::removeByAddress);
    router.delete("/api/v1/suppressions/:id").handler(this::removeById);
  }

  private void list(RoutingContext ctx) {
    Input in = Input.of(ctx);
    ListQuery q = new ListQuery(in.string("address"), in.string("scope"), in.number("limit").intValue(),
        in.number("offset").intValue());
    Problem.answer(ctx, bus.request(SuppressionMessages.LIST, q, Page.class), SuppressionApi::json);
  }

  private void add(RoutingContext ctx) {
    Input in = Input.of(ctx);
    JsonObject body = in.body();
    Add add;
    try {
      add = new Add(body.getString("address"), body.getString("scope", Suppressions.GLOBAL), body.getString("reason"),
          body.getString("category"), Source.OPERATOR, null, null, Operator.name(in, body),
          Input.parseTime("expiresAt", body.getString("expiresAt")));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(SuppressionMessages.ADD, add, Entry.class), 201, SuppressionApi::json, Problem::ledgerFailure);
  }

  private void removeById(RoutingContext ctx) {
    Input in = Input.of(ctx);
    UUID id;
    try {
      id = UUID.fromString(in.path("id"));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", "not a suppression id: " + in.path("id"));
      return;
    }
    remove(ctx, new Remove(id, null, null, null, operator(in)));
  }

  private void removeByAddress(RoutingContext ctx) {
    Input in = Input.of(ctx);
    remove(ctx, new Remove(null, in.string("address"), in.string("scope"), null, operator(in)));
  }

  private void remove(RoutingContext ctx, Remove r) {
    Problem.answer(ctx, bus.request(SuppressionMessages.REMOVE, r, Entry.class), SuppressionApi::json);
  }

  /** Removing names who did it when the X-Operator header says so; else "admin". */
  private static String operator(Input in) {
    String header = in.header(Operator.HEADER);
    return header == null || header.isBlank() ? "admin" : header.trim();
  }

  static JsonObject json(Entry e) {
    return RecordJson.of(e);
  }

  static JsonObject json(Page p) {
    JsonArray entries = new JsonArray();
    p.entries().forEach(e -> entries.add(json(e)));
    return new JsonObject().put("entries", entries).put("offset", p.offset()).put("more", p.more());
  }
}
