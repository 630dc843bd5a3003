package dev.ledgerpost.api;

import dev.ledgerpost.operate.archive.ArchiveApi;
import dev.ledgerpost.operate.resolutions.AttentionApi;
import dev.ledgerpost.operate.resolutions.BulkResolutions;
import dev.ledgerpost.operate.erasure.ErasureApi;
import dev.ledgerpost.operate.resolutions.OperatorApi;
import dev.ledgerpost.operate.reconcile.ReconcileApi;

import dev.ledgerpost.intake.http.OperationJson;
import dev.ledgerpost.intake.http.SendApi;
import dev.ledgerpost.ledger.MessageJson;
import dev.ledgerpost.operate.resolutions.OperatorViews;
import dev.ledgerpost.platform.web.Bearer;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.publish.webhook.WebhookApi;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.chaos.ChaosMessages;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.ledger.db.StoreException;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.resolutions.OperatorMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.publish.hub.NotifyHub;
import dev.ledgerpost.relay.retry.RetryMessages;
import dev.ledgerpost.publish.webhook.WebhookMessages;
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
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The HTTP API: sends for applications, ledger queries for operators and dashboards, health for orchestrators. */
public final class ApiVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ApiVerticle.class);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(3);
  /** Bodies of the admin endpoints are small JSON documents. */
  private static final long ADMIN_BODY_LIMIT = 64 * 1024;
  /** Set when a send API key (not the admin token) reads an operation: the user it may see. */
  private static final String OPERATION_READER = "ledgerpost.operationReader";
  /** The route the reader may take, on the path the router matches (dot segments removed; a trailing slash is the route's). */
  private static final java.util.regex.Pattern OPERATION_PATH = java.util.regex.Pattern.compile("/api/v1/operations/[^/]+/*");

  /**
   * What every instance of the API shares, one per process: the admin and per-user event tokens (read through their
   * reloadable holders, SIGHUP), the WebSocket hub, the metrics' scrape, the send API's setup (with the configuration)
   * and the operator views.
   */
  public record Shared(EventTokens eventTokens, NotifyHub hub, Supplier<String> scrape, SendApi.Setup sendSetup,
      OperatorViews views) {}

  private final int port;
  private final Shared shared;
  private final GatewayConfig.Http http;
  private final GatewayConfig.Observability observability;
  private HttpServer server;
  private SendApi send;
  private Bus bus;
  private ContractValidation contract;

  /**
   * One of the API's instances; every instance binds the same {@code port} (for a configured 0, one negative
   * number that Vert.x reads as "one random port shared by every server that names it"), so that Vert.x
   * shares one listening socket between them and spreads the connections over them.
   */
  public ApiVerticle(int port, Shared shared) {
    this.port = port;
    this.shared = shared;
    this.http = shared.sendSetup().config().http();
    this.observability = shared.sendSetup().config().observability();
  }

  @Override
  public Future<?> start() {
    return ConsoleFiles.load(vertx).compose(console -> ContractValidation.load(vertx).compose(contract -> start(contract, console)));
  }

  private Future<?> start(ContractValidation contract, ConsoleFiles console) {
    this.contract = contract;
    bus = Bus.of(vertx);
    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> Problem.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    if (observability.metricsAccess() == GatewayConfig.MetricsAccess.PUBLIC) {
      router.get("/metrics").handler(this::metrics);
    } else if (observability.metricsAccess() == GatewayConfig.MetricsAccess.TOKEN) {
      router.get("/metrics").handler(this::authenticate).handler(this::metrics);
    }
    router.get("/api/v1/events").handler(this::events); // authenticates itself: browsers cannot send headers
    console.mount(router); // static files, no token: the console asks for it and sends it to the API
    send = new SendApi(vertx, shared.sendSetup(), contract);
    send.mount(router); // authenticates with send API keys, not the admin token
    router.route("/api/*").handler(this::authenticate);
    router.route("/api/*").handler(BodyHandler.create(false).setBodyLimit(ADMIN_BODY_LIMIT)).handler(contract::handle);
    new OperatorApi(bus).mount(router); // before /messages/:id, which would take "stale" for an id
    new AttentionApi(bus, shared.views()).mount(router);
    new BulkResolutions(bus).mount(router);
    new WebhookApi(bus).mount(router);
    new ReconcileApi(bus).mount(router);
    new ArchiveApi(bus).mount(router);
    new ErasureApi(bus).mount(router);
    router.get("/api/v1/operations/:id").handler(this::operation);
    if (observability.chaosEnabled()) {
      LOG.warn("chaos mode is ON: POST /api/v1/chaos/locks holds ledger table locks on demand (test environments only)");
      router.post("/api/v1/chaos/locks").handler(this::chaosLock);
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
    return shared.hub().clients();
  }

  private void authenticate(RoutingContext ctx) {
    String token = Bearer.token(ctx.request());
    boolean ok = token != null && shared.eventTokens().isAdmin(token);
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
      Problem.unauthorized(ctx, "ledgerpost", "a valid bearer token is required");
      return;
    }
    ctx.next();
  }

  /**
   * The hub's WebSocket upgrade: a token in a header is checked first (401 before any upgrade; a browser sends
   * its token in the first frame instead), then the parameters against the contract, then the hub takes the socket.
   */
  private void events(RoutingContext ctx) {
    EventTokens.Principal principal = null;
    if (Bearer.present(ctx.request())) {
      String token = Bearer.token(ctx.request());
      principal = shared.eventTokens().authenticate(token == null ? "" : token).orElse(null);
      if (principal == null) {
        Problem.unauthorized(ctx, "ledgerpost", null);
        return;
      }
    }
    EventTokens.Principal known = principal;
    // The request must not end while the contract is checked on a worker: the upgrade (which resumes it) waits for its end.
    ctx.request().pause();
    contract.validate(ctx, "subscribeEvents").onComplete(ar -> {
      if (ar.failed()) {
        contract.badRequest(ctx, ar.cause());
        return;
      }
      shared.hub().upgrade(ctx.request(), known, ar.result().number("since"), ar.result().string("client"));
    });
  }

  private void ready(RoutingContext ctx) {
    bus.request(LedgerMessages.PING, new Ping(), Ping.class, READY_TIMEOUT).onComplete(ar -> {
      if (ar.succeeded()) {
        // A nearly full disk leaves the gateway ready (it still takes mail, and an orchestrator that took it out would
        // not free a byte) but says so, for whoever looks (issue 20).
        JsonObject body = new JsonObject().put("status", "UP").put("ledger", "UP");
        shared.views().capacity().readinessReason().ifPresent(reason -> body.put("reason", reason));
        Problem.json(ctx, 200, body);
      } else {
        Problem.send(ctx, 503, "Service Unavailable", "ledger database does not answer: " + ar.cause().getMessage());
      }
    });
  }

  /** Status, limit and the rest are as the contract validated them; only the times are parsed here. */
  private void list(RoutingContext ctx) {
    Input in = Input.of(ctx);
    OffsetDateTime since;
    OffsetDateTime until;
    try {
      since = in.time("since", "2026-11-30T10:00:00Z");
      until = in.time("until", "2026-11-30T11:00:00Z");
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    String status = in.string("status");
    String sender = in.string("sender");
    String recipient = in.string("recipient");
    String messageId = in.string("messageId");
    ListQuery query = new ListQuery(status == null ? null : MessageStatus.valueOf(status),
        sender == null || sender.isEmpty() ? null : sender, recipient == null || recipient.isEmpty() ? null : recipient, since,
        until, in.number("limit").intValue(), in.string("cursor"), messageId == null || messageId.isEmpty() ? null : messageId);
    Problem.answer(ctx, bus.request(LedgerMessages.LIST, query, MessagePage.class), MessageJson::page);
  }

  private void detail(RoutingContext ctx) {
    UUID id = UUID.fromString(Input.of(ctx).path("id"));
    Future<MessageDetail> detail = bus.request(LedgerMessages.GET, new Get(id), MessageDetail.class);
    Problem.answer(ctx, detail.compose(d -> proposals(id).map(p -> MessageJson.detail(d, p))), json -> json);
  }

  private void metrics(RoutingContext ctx) {
    ctx.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8").end(shared.scrape().get());
  }

  private void chaosLock(RoutingContext ctx) {
    JsonObject body = Input.of(ctx).body();
    List<String> tables = new ArrayList<>();
    body.getJsonArray("tables").forEach(t -> tables.add((String) t));
    ChaosMessages.ChaosLock request = new ChaosMessages.ChaosLock(tables, body.getLong("millis"));
    bus.request(ChaosMessages.LOCK, request, ChaosMessages.ChaosLocked.class, Duration.ofSeconds(15))
        .onComplete(ar -> {
          if (ar.succeeded()) {
            Problem.json(ctx, 202, new JsonObject().put("tables", ar.result().tables()).put("millis", ar.result().millis()));
          } else if (ar.cause() instanceof StoreException le && le.kind() == StoreException.Kind.STALE) {
            Problem.send(ctx, 409, "Conflict", le.getMessage());
          } else if (ar.cause() instanceof StoreException le && le.kind() == StoreException.Kind.BAD_REQUEST) {
            Problem.send(ctx, 400, "Bad Request", le.getMessage());
          } else {
            Problem.send(ctx, 503, "Service Unavailable", "lock not obtained: " + ar.cause().getMessage());
          }
        });
  }

  /** The reconcile proposals of one message, newest first (docs/design.md §8.4). */
  private Future<List<ProposalView>> proposals(UUID id) {
    return bus.request(ReconcileMessages.OF_MESSAGE, new ReconcileMessages.OfMessage(id), ReconcileMessages.Proposals.class)
        .map(ReconcileMessages.Proposals::items);
  }

  /** docs/contract.md §1.11: an operation's status is a set of facts, each saying where it was read from. */
  private void operation(RoutingContext ctx) {
    UUID id = UUID.fromString(Input.of(ctx).path("id"));
    Future<Boolean> retrying = bus.request(RetryMessages.HELD, new RetryMessages.HeldQuery(), RetryMessages.HeldOutcomes.class,
            READY_TIMEOUT)
        .map(held -> held.ids().contains(id));
    Future<WebhookMessages.MessageDeliveries> webhooks = bus.request(WebhookMessages.FOR_MESSAGE,
        new WebhookMessages.ForMessage(id), WebhookMessages.MessageDeliveries.class, READY_TIMEOUT);
    Future<List<ProposalView>> proposals = proposals(id);
    bus.request(OperatorMessages.OPERATION, new OperatorMessages.Operation(id, shared.sendSetup().config().node().deadAfter()),
            OperatorMessages.OperationFacts.class)
        .compose(facts -> proposals.map(p -> facts))
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
            String self = shared.sendSetup().config().node().effectiveId();
            List<String> on = new ArrayList<>(ar.result().heldBy());
            boolean selfOnHeartbeat = on.remove(self);
            if (r.succeeded() ? r.result() : selfOnHeartbeat) {
              on.add(0, self);
            }
            Boolean held = !on.isEmpty() ? Boolean.TRUE : r.succeeded() ? Boolean.FALSE : null;
            Problem.json(ctx, 200, OperationJson.of(ar.result(), proposals.result(), held, on, shared.hub().attempts(id))
                .put("webhooks", webhooks.succeeded() ? WebhookApi.forOperation(webhooks.result().deliveries()) : null));
          });
        });
  }


  @Override
  public Future<?> stop() {
    GatewayConfig config = shared.sendSetup().config();
    Future<Void> sends = send == null ? Future.succeededFuture()
        : send.close(config.smtp().shutdownGrace(), config.intakeStopBound());
    return sends.eventually(() -> server == null ? Future.succeededFuture() : server.close());
  }
}
