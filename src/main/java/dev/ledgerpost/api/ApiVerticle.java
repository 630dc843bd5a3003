package dev.ledgerpost.api;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.ledger.LedgerException;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.ledger.OutboxMessages;
import dev.ledgerpost.notify.EventTokens;
import dev.ledgerpost.notify.NotifyHub;
import dev.ledgerpost.retry.RetryMessages;
import dev.ledgerpost.webhook.WebhookMessages;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.function.Supplier;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The HTTP API: sends for applications, ledger queries for operators and dashboards, health for orchestrators. */
public final class ApiVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ApiVerticle.class);
  private static final int MAX_LIMIT = 500;
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(3);
  /** Bodies of the admin endpoints are small JSON documents. */
  private static final long ADMIN_BODY_LIMIT = 64 * 1024;
  /** Set when a send API key (not the admin token) reads an operation: the user it may see. */
  private static final String OPERATION_READER = "ledgerpost.operationReader";
  /** The route the reader may take, on the path the router matches (dot segments removed). */
  private static final java.util.regex.Pattern OPERATION_PATH = java.util.regex.Pattern.compile("/api/v1/operations/[^/]+");

  private final GatewayConfig.Http http;
  private final int port;
  /** The admin token and the per-user event tokens, read through their reloadable holders (SIGHUP). */
  private final EventTokens eventTokens;
  private final NotifyHub hub;
  private final SendApi.Setup sendSetup;
  private HttpServer server;
  private SendApi send;
  private Bus bus;

  private final GatewayMetrics metrics;
  private final Supplier<String> scrape;
  private final GatewayConfig.Observability observability;
  private final OperatorViews views;

  /**
   * One of the API's instances; every instance binds the same {@code port} (for a configured 0, one negative
   * number that Vert.x reads as "one random port shared by every server that names it"), so that Vert.x
   * shares one listening socket between them and spreads the connections over them. {@code hub} is the WebSocket hub's,
   * one per process, and so are {@code views}.
   */
  public ApiVerticle(GatewayConfig.Http http, int port, EventTokens eventTokens, NotifyHub hub, GatewayMetrics metrics,
      Supplier<String> scrape, GatewayConfig.Observability observability, SendApi.Setup sendSetup, OperatorViews views) {
    this.http = http;
    this.port = port;
    this.hub = hub;
    this.metrics = metrics;
    this.scrape = scrape;
    this.observability = observability;
    this.eventTokens = eventTokens;
    this.sendSetup = sendSetup;
    this.views = views;
  }

  @Override
  public Future<?> start() {
    return ConsoleFiles.load(vertx).compose(console -> ContractValidation.load(vertx).compose(contract -> start(contract, console)));
  }

  private Future<?> start(ContractValidation contract, ConsoleFiles console) {
    bus = Bus.of(vertx);
    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> Problem.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    if (observability.metricsAccess() == GatewayConfig.MetricsAccess.PUBLIC) {
      router.get("/metrics").handler(this::metrics);
    } else if (observability.metricsAccess() == GatewayConfig.MetricsAccess.TOKEN) {
      router.get("/metrics").handler(this::authenticate).handler(this::metrics);
    }
    router.get("/api/v1/events").handler(hub::handle); // authenticates itself: browsers cannot send headers
    console.mount(router); // static files, no token: the console asks for it and sends it to the API
    send = new SendApi(vertx, sendSetup, contract);
    send.mount(router); // authenticates with send API keys, not the admin token
    router.route("/api/*").handler(this::authenticate);
    router.route("/api/*").handler(BodyHandler.create(false).setBodyLimit(ADMIN_BODY_LIMIT)).handler(contract::handle);
    new OperatorApi(bus).mount(router); // before /messages/:id, which would take "stale" for an id
    new AttentionApi(bus, views).mount(router);
    new BulkResolutions(bus).mount(router);
    new WebhookApi(bus).mount(router);
    new ReconcileApi(bus).mount(router);
    router.get("/api/v1/operations/:id").handler(this::operation);
    if (observability.chaosEnabled()) {
      LOG.warn("chaos mode is ON: POST /api/v1/chaos/locks holds ledger table locks on demand (test environments only)");
      router.post("/api/v1/chaos/locks").handler(BodyHandler.create().setBodyLimit(4096)).handler(this::chaosLock);
    }
    router.get("/api/v1/messages").handler(this::list);
    router.get("/api/v1/messages/:id").handler(this::detail);
    router.route().last().handler(ctx -> Problem.send(ctx, 404, "Not Found", "no such resource"));
    router.errorHandler(405, ctx -> Problem.send(ctx, 405, "Method Not Allowed", null));
    router.errorHandler(413, ctx -> Problem.send(ctx, 413, "Content Too Large", "the request body is too large"));
    router.errorHandler(500, ctx -> {
      LOG.error("API request {} failed", ctx.request().path(), ctx.failure());
      Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
    });
    server = vertx.createHttpServer(new HttpServerOptions().setHost(http.host()).setPort(port));
    return server.requestHandler(router).listen()
        .onSuccess(s -> LOG.info("HTTP API listening on {}:{}", http.host(), s.actualPort()));
  }

  public int actualPort() {
    return server.actualPort();
  }

  /** Connected WebSocket subscribers. */
  public int notifyClients() {
    return hub.clients();
  }

  private void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    String prefix = "Bearer ";
    boolean ok = header != null && header.regionMatches(true, 0, prefix, 0, prefix.length())
        && eventTokens.isAdmin(header.substring(prefix.length()).trim());
    if (!ok && ctx.request().method() == HttpMethod.GET && OPERATION_PATH.matcher(ctx.normalizedPath()).matches()) {
      // A send API key may follow the Location of its own sends; operation() checks the message is its user's.
      var key = send.apiKey(ctx);
      if (key.isPresent()) {
        ctx.put(OPERATION_READER, key.get().user());
        ctx.next();
        return;
      }
    }
    if (!ok) {
      ctx.response().putHeader("WWW-Authenticate", "Bearer realm=\"ledgerpost\"");
      Problem.send(ctx, 401, "Unauthorized", "a valid bearer token is required");
      return;
    }
    ctx.next();
  }

  private void ready(RoutingContext ctx) {
    bus.request(LedgerMessages.PING, new Ping(), Ping.class, READY_TIMEOUT).onComplete(ar -> {
      if (ar.succeeded()) {
        Problem.json(ctx, 200, new JsonObject().put("status", "UP").put("ledger", "UP"));
      } else {
        Problem.send(ctx, 503, "Service Unavailable", "ledger database does not answer: " + ar.cause().getMessage());
      }
    });
  }

  private void list(RoutingContext ctx) {
    ListQuery query;
    try {
      query = listQuery(ctx);
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(LedgerMessages.LIST, query, MessagePage.class).onComplete(ar -> {
      if (ar.succeeded()) {
        Problem.json(ctx, 200, MessageJson.page(ar.result()));
      } else {
        Problem.ledgerFailure(ctx, ar.cause());
      }
    });
  }

  private static ListQuery listQuery(RoutingContext ctx) {
    MessageStatus status = null;
    String s = ctx.queryParams().get("status");
    if (s != null && !s.isEmpty()) {
      try {
        status = MessageStatus.valueOf(s.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("status must be one of " + java.util.Arrays.toString(MessageStatus.values()));
      }
    }
    OffsetDateTime since = null;
    String sinceText = ctx.queryParams().get("since");
    if (sinceText != null && !sinceText.isEmpty()) {
      try {
        since = OffsetDateTime.parse(sinceText);
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("since must be an ISO-8601 timestamp with offset, e.g. 2026-11-30T10:00:00Z");
      }
    }
    int limit = 50;
    String limitText = ctx.queryParams().get("limit");
    if (limitText != null && !limitText.isEmpty()) {
      try {
        limit = Integer.parseInt(limitText);
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > MAX_LIMIT) {
        throw new IllegalArgumentException("limit must be a whole number from 1 to " + MAX_LIMIT);
      }
    }
    OffsetDateTime until = null;
    String untilText = ctx.queryParams().get("until");
    if (untilText != null && !untilText.isEmpty()) {
      try {
        until = OffsetDateTime.parse(untilText);
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("until must be an ISO-8601 timestamp with offset, e.g. 2026-11-30T11:00:00Z");
      }
    }
    String sender = ctx.queryParams().get("sender");
    String recipient = ctx.queryParams().get("recipient");
    String messageId = ctx.queryParams().get("messageId");
    return new ListQuery(status, sender == null || sender.isEmpty() ? null : sender,
        recipient == null || recipient.isEmpty() ? null : recipient, since, until, limit, ctx.queryParams().get("cursor"),
        messageId == null || messageId.isEmpty() ? null : messageId);
  }

  private void detail(RoutingContext ctx) {
    UUID id;
    try {
      id = UUID.fromString(ctx.pathParam("id"));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", "message id must be a UUID");
      return;
    }
    bus.request(LedgerMessages.GET, new Get(id), MessageDetail.class).onComplete(ar -> {
      if (ar.succeeded()) {
        Problem.json(ctx, 200, MessageJson.detail(ar.result()));
      } else {
        Problem.ledgerFailure(ctx, ar.cause());
      }
    });
  }

  private void metrics(RoutingContext ctx) {
    ctx.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8").end(scrape.get());
  }

  private void chaosLock(RoutingContext ctx) {
    OutboxMessages.ChaosLock request;
    try {
      JsonObject body = ctx.body().asJsonObject();
      java.util.List<String> tables = new java.util.ArrayList<>();
      body.getJsonArray("tables").forEach(t -> tables.add((String) t));
      request = new OutboxMessages.ChaosLock(tables, body.getLong("millis"));
    } catch (RuntimeException e) {
      Problem.send(ctx, 400, "Bad Request", "expected {\"tables\": [\"messages\", ...], \"millis\": N}");
      return;
    }
    bus.request(OutboxMessages.CHAOS_LOCK, request, OutboxMessages.ChaosLocked.class, java.time.Duration.ofSeconds(15))
        .onComplete(ar -> {
          if (ar.succeeded()) {
            Problem.json(ctx, 202, new JsonObject().put("tables", ar.result().tables()).put("millis", ar.result().millis()));
          } else if (ar.cause() instanceof LedgerException le && le.kind() == LedgerException.Kind.STALE) {
            Problem.send(ctx, 409, "Conflict", le.getMessage());
          } else if (ar.cause() instanceof LedgerException le && le.kind() == LedgerException.Kind.BAD_REQUEST) {
            Problem.send(ctx, 400, "Bad Request", le.getMessage());
          } else {
            Problem.send(ctx, 503, "Service Unavailable", "lock not obtained: " + ar.cause().getMessage());
          }
        });
  }

  /** docs/design.md §4.6: an operation's status is a set of facts, each saying where it was read from. */
  private void operation(RoutingContext ctx) {
    UUID id;
    try {
      id = UUID.fromString(ctx.pathParam("id"));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", "operation id must be a UUID");
      return;
    }
    Future<Boolean> retrying = bus.request(RetryMessages.HELD, new RetryMessages.HeldQuery(), RetryMessages.HeldOutcomes.class,
            READY_TIMEOUT)
        .map(held -> held.ids().contains(id));
    Future<WebhookMessages.MessageDeliveries> webhooks = bus.request(WebhookMessages.FOR_MESSAGE,
        new WebhookMessages.ForMessage(id), WebhookMessages.MessageDeliveries.class, READY_TIMEOUT);
    bus.request(OutboxMessages.OPERATION, new OutboxMessages.Operation(id, sendSetup.config().node().deadAfter()), OutboxMessages.OperationFacts.class)
        .onComplete(ar -> {
          if (ar.failed()) {
            Problem.ledgerFailure(ctx, ar.cause());
            return;
          }
          String reader = ctx.get(OPERATION_READER);
          if (reader != null && !reader.equals(ar.result().message().authUser())) {
            Problem.send(ctx, 404, "Not Found", "no message " + id); // another user's message does not exist for this key
            return;
          }
          // This node's retry part answers for itself (fresher than its heartbeat), the others' heartbeats for them;
          // if it cannot answer and no other node holds the outcome, say so rather than guess.
          Future.join(retrying, webhooks).onComplete(done -> {
            var r = retrying;
            String self = sendSetup.config().node().effectiveId();
            List<String> on = new ArrayList<>(ar.result().heldBy());
            boolean selfOnHeartbeat = on.remove(self);
            if (r.succeeded() ? r.result() : selfOnHeartbeat) {
              on.add(0, self);
            }
            Boolean held = !on.isEmpty() ? Boolean.TRUE : r.succeeded() ? Boolean.FALSE : null;
            Problem.json(ctx, 200, OperationJson.of(ar.result(), held, on, hub.attempts(id))
                .put("webhooks", webhooks.succeeded() ? WebhookApi.forOperation(webhooks.result().deliveries()) : null));
          });
        });
  }


  @Override
  public Future<?> stop() {
    Future<Void> sends = send == null ? Future.succeededFuture() : send.close(sendSetup.config().smtp().shutdownGrace());
    return sends.eventually(() -> server == null ? Future.succeededFuture() : server.close());
  }
}
