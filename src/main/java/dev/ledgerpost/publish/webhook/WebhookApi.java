package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.publish.webhook.ReplayRangeGone;
import dev.ledgerpost.publish.webhook.WebhookMessages;
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
 * The operator's webhook endpoints (docs/design.md §6.6): the configured endpoints and their state (never their
 * secrets), re-enabling one a 410 disabled, its deliveries, a retry of one, a replay of a range. Endpoint URLs are
 * fixed in the configuration: nothing here can point the gateway at another address. Parameters are checked
 * against openapi.yaml before these handlers run.
 */
public record WebhookApi(Bus bus) {
  private static final Set<String> STATES = Set.of("PENDING", "ATTEMPTED", "DELIVERED", "FAILED");

  public void mount(Router router) {
    router.get("/api/v1/webhooks").handler(this::list);
    router.post("/api/v1/webhooks/:name/enable").handler(this::enable);
    router.get("/api/v1/webhooks/:name/deliveries").handler(this::deliveries);
    router.get("/api/v1/webhooks/:name/deliveries/:id").handler(this::delivery);
    router.post("/api/v1/webhooks/:name/deliveries/:id/retry").handler(this::retry);
    router.post("/api/v1/webhooks/:name/replay").handler(this::replay);
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
    answer(ctx, 200, bus.request(WebhookMessages.ENABLE, new WebhookMessages.Enable(ctx.pathParam("name")), EndpointView.class),
        WebhookApi::endpoint);
  }

  private void deliveries(RoutingContext ctx) {
    String state = ctx.queryParams().get("state");
    if (state != null && !state.isEmpty() && !STATES.contains(state.toUpperCase(Locale.ROOT))) {
      Problem.send(ctx, 400, "Bad Request", "state must be one of " + STATES);
      return;
    }
    int limit = number(ctx, "limit", 100);
    Long before = ctx.queryParams().get("cursor") == null ? null : whole(ctx, "cursor", 0);
    WebhookMessages.DeliveryQuery q = new WebhookMessages.DeliveryQuery(ctx.pathParam("name"),
        state == null || state.isEmpty() ? null : state.toUpperCase(Locale.ROOT), limit, before);
    answer(ctx, 200, bus.request(WebhookMessages.DELIVERIES, q, WebhookMessages.DeliveryPage.class), page -> {
      JsonArray items = new JsonArray();
      page.items().forEach(d -> items.add(delivery(d)));
      return new JsonObject().put("items", items).put("next", page.next() == null ? null : page.next().toString());
    });
  }

  private void delivery(RoutingContext ctx) {
    answer(ctx, 200, bus.request(WebhookMessages.DELIVERY, new WebhookMessages.DeliveryGet(ctx.pathParam("name"), id(ctx)),
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
    answer(ctx, 202, bus.request(WebhookMessages.RETRY, new WebhookMessages.Retry(ctx.pathParam("name"), id(ctx)),
        DeliveryView.class), WebhookApi::delivery);
  }

  private void replay(RoutingContext ctx) {
    long since = whole(ctx, "since", 0);
    Long until = ctx.queryParams().get("until") == null ? null : whole(ctx, "until", 0);
    if (until != null && until <= since) {
      Problem.send(ctx, 400, "Bad Request", "until must be above since: the range is the events after since, up to until");
      return;
    }
    answer(ctx, 202, bus.request(WebhookMessages.REPLAY, new WebhookMessages.Replay(ctx.pathParam("name"), since, until),
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
        .put("user", e.user())
        .put("secrets", e.secrets())
        .put("state", e.enabled() ? "ENABLED" : "DISABLED")
        .put("disabledAt", text(e.disabledAt()))
        .put("disabledReason", e.disabledReason())
        .put("recordedThrough", e.recordedThrough())
        .put("deliveries", new JsonObject().put("pending", e.pending()).put("attempted", e.attempted())
            .put("failed", e.failed()).put("inFlight", e.inFlight()))
        .put("oldestOpenAt", text(e.oldestOpenAt()));
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
    Problem.ledgerFailure(ctx, e); // an unknown endpoint or delivery: 404
  }
}
