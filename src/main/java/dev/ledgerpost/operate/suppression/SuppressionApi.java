package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Add;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.operate.suppression.SuppressionMessages.ListQuery;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Page;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Remove;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Source;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.platform.web.AdminOrSendKey;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.platform.web.RecordJson;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * {@code /api/v1/suppressions} (docs/design.md §8.8): list the entries (by address, by scope, a page at a time), add one
 * (an operator's: {@code source} operator), remove one by id or by address and scope. The admin token manages every
 * scope; a send API key only its own user's ({@code user:<name>}): its requests are held to that scope, and another
 * scope is 403 (to add, list or remove by address) or 404 (an entry of another scope, by id). Who asks is named as for a
 * resolution (the X-Operator header or the body's operator), for a send key by default its user.
 */
public record SuppressionApi(Bus bus) {
  /**
   * Open routes (before the admin check): each authenticates itself (the admin token, or a send API key), then reads its
   * body and is checked against the contract as every admin route is, then runs.
   */
  public void mount(Router router, EventTokens tokens, ApiKeys keys, ContractValidation contract) {
    route(router, HttpMethod.GET, "/api/v1/suppressions", tokens, keys, contract, this::list);
    route(router, HttpMethod.POST, "/api/v1/suppressions", tokens, keys, contract, this::add);
    route(router, HttpMethod.POST, "/api/v1/suppressions/import", tokens, keys, contract, this::importCsv);
    route(router, HttpMethod.DELETE, "/api/v1/suppressions", tokens, keys, contract, this::removeByAddress);
    route(router, HttpMethod.DELETE, "/api/v1/suppressions/:id", tokens, keys, contract, this::removeById);
    route(router, HttpMethod.GET, "/api/v1/refusals", tokens, keys, contract, this::refusals);
  }

  private static void route(Router router, HttpMethod method, String path, EventTokens tokens, ApiKeys keys,
      ContractValidation contract, Handler<RoutingContext> handler) {
    router.route(method, path).handler(AdminOrSendKey.handler(tokens, keys)); // a route's body handler must be its first
    router.route(method, path).handler(BodyHandler.create(false).setBodyLimit(HttpFace.ADMIN_BODY_LIMIT))
        .handler(contract::handle).handler(handler);
  }


  /** A send API key's one scope ({@code user:<its user>}); null for the admin token, which manages every scope. */
  private static String ownScope(RoutingContext ctx) {
    String user = AdminOrSendKey.user(ctx);
    return user == null ? null : Suppressions.scopeOf(user);
  }

  /** A send key's request for another scope than its own: 403, and true. */
  private static boolean foreign(RoutingContext ctx, String scope) {
    String own = ownScope(ctx);
    if (own != null && scope != null && !scope.equals(own)) {
      Problem.send(ctx, 403, "Forbidden", "a send API key manages the entries of its own user only (scope " + own + ")");
      return true;
    }
    return false;
  }

  private void list(RoutingContext ctx) {
    Input in = Input.of(ctx);
    if (foreign(ctx, in.string("scope"))) {
      return;
    }
    String own = ownScope(ctx);
    ListQuery q = new ListQuery(in.string("address"), own != null ? own : in.string("scope"), in.number("limit").intValue(),
        in.number("offset").intValue());
    Problem.answer(ctx, bus.request(SuppressionMessages.LIST, q, Page.class), SuppressionApi::json);
  }

  /**
   * Refused recipients, newest first (§8.8): by recipient, since a time, by user. A send key sees its own user's only
   * (another {@code user} is 403); the admin token every user's, and the unauthenticated relay clients'.
   */
  private void refusals(RoutingContext ctx) {
    Input in = Input.of(ctx);
    String own = ownScope(ctx);
    String user = in.string("user");
    if (foreign(ctx, user == null ? null : Suppressions.scopeOf(user))) {
      return;
    }
    RefusalMessages.ListQuery q;
    try {
      q = new RefusalMessages.ListQuery(in.string("recipient"), Input.parseTime("since", in.string("since")),
          own != null ? own.substring("user:".length()) : user, in.number("limit").intValue(), in.number("offset").intValue());
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(RefusalMessages.LIST, q, RefusalMessages.Page.class), SuppressionApi::json);
  }

  static JsonObject json(RefusalMessages.Page p) {
    JsonArray refusals = new JsonArray();
    p.refusals().forEach(r -> refusals.add(RecordJson.of(r)));
    return new JsonObject().put("refusals", refusals).put("offset", p.offset()).put("more", p.more());
  }

  private void add(RoutingContext ctx) {
    Input in = Input.of(ctx);
    JsonObject body = in.body();
    String own = ownScope(ctx);
    String scope = body.getString("scope", own != null ? own : Suppressions.GLOBAL);
    if (foreign(ctx, scope)) {
      return;
    }
    Add add;
    try {
      String by = own != null && in.header(Operator.HEADER) == null && body.getString("operator") == null
          ? own : Operator.name(in, body);
      add = new Add(body.getString("address"), scope, body.getString("reason"), body.getString("category"), Source.OPERATOR,
          null, null, by, Input.parseTime("expiresAt", body.getString("expiresAt")));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(SuppressionMessages.ADD, add, Entry.class), 201, SuppressionApi::json, Problem::ledgerFailure);
  }

  /** {@code address,scope,reason} lines (text/plain: the contract's validator reads no text/csv), all added or none. */
  private void importCsv(RoutingContext ctx) {
    Input in = Input.of(ctx);
    String own = ownScope(ctx);
    List<Add> entries = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    try {
      String header = in.header(Operator.HEADER);
      String by = header != null && !header.isBlank() ? header.trim() : own != null ? own : null;
      if (by == null) {
        throw new IllegalArgumentException("the operator is required: an " + Operator.HEADER + " header");
      }
      for (SuppressionCsv row : SuppressionCsv.parse(ctx.body().asString())) {
        String scope = row.scope().isEmpty() ? (own != null ? own : Suppressions.GLOBAL) : row.scope();
        if (own != null && !scope.equals(own)) {
          Problem.send(ctx, 403, "Forbidden", "line " + row.line() + ": a send API key manages the entries of its own user only (scope "
              + own + ")");
          return;
        }
        Add add = new Add(row.address(), scope, row.reason(), null, Source.OPERATOR, null, null, by, null);
        // Checked here too, where the line is known: the store can only count entries, and a file has headers and blanks.
        String problem = SuppressionStore.invalid(add);
        if (problem != null) {
          problems.add("line " + row.line() + ": " + problem);
        }
        entries.add(add);
      }
      if (!problems.isEmpty()) {
        throw new IllegalArgumentException(String.join("; ", problems.subList(0, Math.min(10, problems.size())))
            + (problems.size() > 10 ? "; and " + (problems.size() - 10) + " more line(s)" : "")
            + "; nothing was imported");
      }
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(SuppressionMessages.IMPORT, new SuppressionMessages.Import(entries),
        SuppressionMessages.Imported.class), RecordJson::of);
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
    remove(ctx, new Remove(id, null, null, ownScope(ctx), operator(ctx, in)));
  }

  private void removeByAddress(RoutingContext ctx) {
    Input in = Input.of(ctx);
    if (foreign(ctx, in.string("scope"))) {
      return;
    }
    remove(ctx, new Remove(null, in.string("address"), in.string("scope"), ownScope(ctx), operator(ctx, in)));
  }

  private void remove(RoutingContext ctx, Remove r) {
    Problem.answer(ctx, bus.request(SuppressionMessages.REMOVE, r, Entry.class), SuppressionApi::json);
  }

  /** Removing names who did it when the X-Operator header says so; else "admin", or a send key's scope. */
  private static String operator(RoutingContext ctx, Input in) {
    String header = in.header(Operator.HEADER);
    String own = ownScope(ctx);
    return header != null && !header.isBlank() ? header.trim() : own != null ? own : "admin";
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
