package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.AdminOrSendKey;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.handler.BodyHandler;
import dev.ledgerpost.publish.webhook.WebhookMessages.AttemptView;
import dev.ledgerpost.publish.webhook.WebhookMessages.DeliveryView;
import dev.ledgerpost.publish.webhook.WebhookMessages.EndpointView;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/**
 * Webhook endpoints through the API (docs/design.md §6.6). The admin token lists every endpoint with its state
 * ({@code GET /api/v1/webhooks}, admin only). A user's send key makes, reads, changes, rotates and deletes its own
 * endpoints under {@code /api/v1/webhooks/endpoints}, and reaches their deliveries, retries, replays and re-enabling
 * under {@code /api/v1/webhooks/{name}/...}; the admin token reaches every endpoint there. Another user's endpoint is
 * 404: a key learns nothing of what is not its own. Never a secret, but the one a creation or a rotation makes, once.
 * Those routes authenticate themselves (admin token or send key) before the admin check; parameters and bodies are
 * checked against openapi.yaml before these handlers run.
 */
public final class WebhookApi {
  private static final Set<String> STATES = Set.of("PENDING", "ATTEMPTED", "DELIVERED", "FAILED");

  private final Bus bus;
  private final EventTokens tokens;
  private final ApiKeys keys;
  private final ContractValidation contract;

  public WebhookApi(Bus bus, EventTokens tokens, ApiKeys keys, ContractValidation contract) {
    this.bus = bus;
    this.tokens = tokens;
    this.keys = keys;
    this.contract = contract;
  }

  /** Behind the admin check: the list of every endpoint with its state. */
  public void mount(Router router) {
    router.get("/api/v1/webhooks").handler(this::list);
  }

  /** Before the admin check: routes for the admin token and send keys alike, each call scoped to its caller. */
  public void mountOpen(Router router) {
    route(router, HttpMethod.GET, "/api/v1/webhooks/endpoints", this::endpoints);
    route(router, HttpMethod.POST, "/api/v1/webhooks/endpoints", this::create);
    route(router, HttpMethod.GET, "/api/v1/webhooks/endpoints/:id", this::endpoint);
    route(router, HttpMethod.PATCH, "/api/v1/webhooks/endpoints/:id", this::update);
    route(router, HttpMethod.DELETE, "/api/v1/webhooks/endpoints/:id", this::remove);
    route(router, HttpMethod.POST, "/api/v1/webhooks/endpoints/:id/rotate-secret", this::rotate);
    route(router, HttpMethod.POST, "/api/v1/webhooks/:name/enable", this::enable);
    route(router, HttpMethod.GET, "/api/v1/webhooks/:name/deliveries", this::deliveries);
    route(router, HttpMethod.GET, "/api/v1/webhooks/:name/deliveries/:id", this::delivery);
    route(router, HttpMethod.POST, "/api/v1/webhooks/:name/deliveries/:id/retry", this::retry);
    route(router, HttpMethod.POST, "/api/v1/webhooks/:name/replay", this::replay);
  }

  /** Authentication first (a route's body handler must be its first handler, so it is a route of its own), then as every admin route. */
  private void route(Router router, HttpMethod method, String path, Handler<RoutingContext> handler) {
    router.route(method, path).handler(AdminOrSendKey.handler(tokens, keys));
    router.route(method, path).handler(BodyHandler.create(false).setBodyLimit(HttpFace.ADMIN_BODY_LIMIT))
        .handler(contract::handle).handler(handler);
  }


  /** The send key's user, or null for the admin token. */
  private static String scope(RoutingContext ctx) {
    return AdminOrSendKey.user(ctx);
  }

  private void endpoints(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.ENDPOINTS, new WebhookMessages.EndpointsQuery(scope(ctx)),
        WebhookMessages.ManagedList.class), l -> {
          JsonArray items = new JsonArray();
          l.endpoints().forEach(m -> items.add(managed(m)));
          return new JsonObject().put("items", items);
        });
  }

  private void endpoint(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.ENDPOINT, new WebhookMessages.EndpointGet(ctx.pathParam("id"), scope(ctx)),
        WebhookMessages.Managed.class), WebhookApi::managed);
  }

  /** A send key makes endpoints for its own user; the admin token names the user ({@code user}). */
  private void create(RoutingContext ctx) {
    JsonObject body = Input.of(ctx).body();
    String scope = scope(ctx);
    String user = body.getString("user");
    if (scope != null && user != null && !user.equals(scope)) {
      Problem.send(ctx, 403, "Forbidden", "this send key makes endpoints for its own user (" + scope + ") only; leave out user");
      return;
    }
    if (scope == null && user == null) {
      Problem.send(ctx, 422, "Unprocessable Content", "user is required with the admin token: the user whose messages the endpoint takes");
      return;
    }
    WebhookMessages.Create q = new WebhookMessages.Create(scope != null ? scope : user, body.getString("url"), strings(body, "events"),
        strings(body, "tags"), body.getInteger("rateLimit"));
    answer(ctx, 201, bus.request(WebhookMessages.CREATE, q, WebhookMessages.Created.class),
        c -> managed(c.endpoint()).put("secret", c.secret()));
  }

  private void update(RoutingContext ctx) {
    JsonObject body = Input.of(ctx).body();
    // rateLimit: a number sets it, null gives it back to webhooks.rateLimit, absent leaves it.
    WebhookMessages.Update q = new WebhookMessages.Update(ctx.pathParam("id"), scope(ctx), body.getString("url"),
        strings(body, "events"), strings(body, "tags"), body.getInteger("rateLimit"),
        body.containsKey("rateLimit") && body.getValue("rateLimit") == null, body.getBoolean("enabled"));
    answer(ctx, 200, bus.request(WebhookMessages.UPDATE, q, WebhookMessages.Changed.class),
        c -> skipped(managed(c.endpoint()), c.skipped()));
  }

  private void remove(RoutingContext ctx) {
    bus.request(WebhookMessages.REMOVE, new WebhookMessages.Remove(ctx.pathParam("id"), scope(ctx)), WebhookMessages.Removed.class)
        .onComplete(ar -> {
          if (ar.succeeded()) {
            ctx.response().setStatusCode(204).end();
          } else {
            failure(ctx, ar.cause());
          }
        });
  }

  private void rotate(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.ROTATE, new WebhookMessages.Rotate(ctx.pathParam("id"), scope(ctx)),
        WebhookMessages.Created.class), c -> managed(c.endpoint()).put("secret", c.secret()));
  }

  private static List<String> strings(JsonObject body, String name) {
    JsonArray a = body.getJsonArray(name);
    return a == null ? null : a.stream().map(String::valueOf).toList();
  }

  static JsonObject managed(WebhookMessages.Managed m) {
    return new JsonObject()
        .put("id", m.id())
        .put("source", m.source())
        .put("user", m.user())
        .put("url", m.url())
        .put("events", new JsonArray(m.events()))
        .put("tags", new JsonArray(m.tags()))
        .put("secrets", m.secrets())
        .put("previousSecretUntil", text(m.previousSecretUntil()))
        .put("state", m.enabled() ? "ENABLED" : "DISABLED")
        .put("disabledReason", m.disabledReason())
        .put("rateLimit", m.health().ownRateLimit() ? m.health().rateLimit() : null)
        .put("health", health(m.health()))
        .put("createdAt", text(m.createdAt()))
        .put("updatedAt", text(m.updatedAt()));
  }

  /** An endpoint's health (docs/design.md §6.6): never a secret, the receivers' own error texts as recorded. */
  static JsonObject health(WebhookMessages.Health h) {
    JsonArray errors = new JsonArray();
    for (WebhookMessages.LastError e : h.lastErrors()) {
      errors.add(new JsonObject().put("at", text(e.at())).put("deliveryId", e.deliveryId()).put("eventId", e.eventId())
          .put("status", e.status()).put("error", e.error()));
    }
    return new JsonObject()
        .put("disabledKind", h.disabledKind())
        .put("consecutiveFailures", h.consecutiveFailures())
        .put("failingSince", text(h.failingSince()))
        .put("lastErrors", errors)
        .put("rateLimit", h.rateLimit());
  }

  /** What an enable did not record for the endpoint while it was disabled: the range a replay brings back. */
  private static JsonObject skipped(JsonObject answer, WebhookMessages.Skipped s) {
    return s == null ? answer : answer.put("skipped", new JsonObject().put("since", s.since()).put("until", s.until()));
  }

  private void list(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.LIST, new WebhookMessages.ListEndpoints(), WebhookMessages.EndpointList.class),
        list -> {
          JsonArray endpoints = new JsonArray();
          list.endpoints().forEach(e -> endpoints.add(endpoint(e)));
          return new JsonObject()
              .put("endpoints", endpoints)
              .put("retrySchedule", new JsonArray(list.retrySchedule()))
              .put("timeout", list.timeout())
              .put("concurrency", list.concurrency());
        });
  }

  private void enable(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.ENABLE, new WebhookMessages.Enable(ctx.pathParam("name"), scope(ctx)),
        WebhookMessages.Enabled.class), e -> skipped(endpoint(e.endpoint()), e.skipped()));
  }

  private void deliveries(RoutingContext ctx) {
    String state = ctx.queryParams().get("state");
    if (state != null && !state.isEmpty() && !STATES.contains(state.toUpperCase(Locale.ROOT))) {
      Problem.send(ctx, 400, "Bad Request", "state must be one of " + STATES);
      return;
    }
    int limit = number(ctx, "limit", 100);
    Long before = ctx.queryParams().get("cursor") == null ? null : whole(ctx, "cursor", 0);
    WebhookMessages.DeliveryQuery q = new WebhookMessages.DeliveryQuery(ctx.pathParam("name"), scope(ctx),
        state == null || state.isEmpty() ? null : state.toUpperCase(Locale.ROOT), limit, before);
    answer(ctx, 200, bus.request(WebhookMessages.DELIVERIES, q, WebhookMessages.DeliveryPage.class), page -> {
      JsonArray items = new JsonArray();
      page.items().forEach(d -> items.add(delivery(d)));
      return new JsonObject().put("items", items).put("next", page.next() == null ? null : page.next().toString());
    });
  }

  private void delivery(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.DELIVERY, new WebhookMessages.DeliveryGet(ctx.pathParam("name"), scope(ctx), id(ctx)),
        WebhookMessages.DeliveryDetail.class), detail -> {
          JsonArray attempts = new JsonArray();
          for (AttemptView a : detail.attempts()) {
            attempts.add(new JsonObject().put("n", a.n()).put("node", a.node()).put("at", text(a.at()))
                .put("status", a.status()).put("error", a.error()).put("latencyMs", a.latencyMs()));
          }
          return delivery(detail.delivery()).put("attemptList", attempts);
        });
  }

  private void retry(RoutingContext ctx) {
    answer(ctx, 202, bus.request(WebhookMessages.RETRY, new WebhookMessages.Retry(ctx.pathParam("name"), scope(ctx), id(ctx)),
        DeliveryView.class), WebhookApi::delivery);
  }

  private void replay(RoutingContext ctx) {
    long since = whole(ctx, "since", 0);
    Long until = ctx.queryParams().get("until") == null ? null : whole(ctx, "until", 0);
    if (until != null && until <= since) {
      Problem.send(ctx, 400, "Bad Request", "until must be above since: the range is the events after since, up to until");
      return;
    }
    answer(ctx, 202, bus.request(WebhookMessages.REPLAY, new WebhookMessages.Replay(ctx.pathParam("name"), scope(ctx), since, until),
        WebhookMessages.Replayed.class), r -> new JsonObject().put("endpoint", r.endpoint()).put("since", r.since())
            .put("until", r.until()).put("recorded", r.recorded()).put("rearmed", r.rearmed()));
  }

  /** {@code status} with the answer's body, or the webhook part's refusal (or the ledger's failure) as a problem. */
  private static <T> void answer(RoutingContext ctx, int status, Future<T> answer, Function<T, JsonObject> body) {
    Problem.answer(ctx, answer, status, body, WebhookApi::failure);
  }

  static JsonObject endpoint(EndpointView e) {
    return new JsonObject()
        .put("name", e.name())
        .put("url", e.url())
        .put("events", new JsonArray(e.events()))
        .put("tags", new JsonArray(e.tags()))
        .put("user", e.user())
        .put("secrets", e.secrets())
        .put("state", e.enabled() ? "ENABLED" : "DISABLED")
        .put("disabledAt", text(e.disabledAt()))
        .put("disabledReason", e.disabledReason())
        .put("recordedThrough", e.recordedThrough())
        .put("deliveries", new JsonObject().put("pending", e.pending()).put("attempted", e.attempted())
            .put("failed", e.failed()).put("inFlight", e.inFlight()))
        .put("oldestOpenAt", text(e.oldestOpenAt()))
        .put("health", health(e.health()));
  }

  static JsonObject delivery(DeliveryView d) {
    return new JsonObject()
        .put("id", d.id())
        .put("endpoint", d.endpoint())
        .put("eventId", d.eventId())
        .put("seq", d.pubSeq())
        .put("type", d.type())
        .put("messageId", d.messageId() == null ? null : d.messageId().toString())
        .put("state", d.state())
        .put("attempts", d.attempts())
        .put("inFlight", d.inFlight())
        .put("nextAttemptAt", text(d.nextAttemptAt()))
        .put("lastAttemptAt", text(d.lastAttemptAt()))
        .put("lastStatus", d.lastStatus())
        .put("lastError", d.lastError())
        .put("deliveredAt", text(d.deliveredAt()))
        .put("createdAt", text(d.createdAt()));
  }

  /** For the operation status: each endpoint's delivery of each of the message's events. */
  public static JsonArray forOperation(List<DeliveryView> deliveries) {
    JsonArray out = new JsonArray();
    for (DeliveryView d : deliveries) {
      out.add(new JsonObject().put("endpoint", d.endpoint()).put("eventId", d.eventId()).put("type", d.type())
          .put("seq", d.pubSeq()).put("state", d.state()).put("attempts", d.attempts()).put("lastStatus", d.lastStatus())
          .put("deliveredAt", text(d.deliveredAt())).put("nextAttemptAt", text(d.nextAttemptAt())));
    }
    return out;
  }

  private static String text(OffsetDateTime t) {
    return t == null ? null : t.toString();
  }

  /** A whole-number parameter openapi.yaml has already checked (so it parses), or its default. */
  private static int number(RoutingContext ctx, String name, int otherwise) {
    return (int) Math.min(Integer.MAX_VALUE, whole(ctx, name, otherwise));
  }

  private static long whole(RoutingContext ctx, String name, long otherwise) {
    String v = ctx.queryParams().get(name);
    return v == null || v.isEmpty() ? otherwise : Long.parseLong(v);
  }

  private static long id(RoutingContext ctx) {
    return Long.parseLong(ctx.pathParam("id"));
  }

  private static void failure(RoutingContext ctx, Throwable e) {
    if (e instanceof ReplayRangeGone gone) {
      Problem.send(ctx, 409, "Conflict", gone.getMessage(), new JsonObject().put("oldestAvailableSeq", gone.oldestAvailable()));
      return;
    }
    if (e instanceof EndpointRefused refused) {
      Problem.send(ctx, refused.status(), refused.status() == 409 ? "Conflict" : "Unprocessable Content", refused.getMessage());
      return;
    }
    Problem.ledgerFailure(ctx, e); // an unknown endpoint or delivery (or another user's): 404
  }
}
