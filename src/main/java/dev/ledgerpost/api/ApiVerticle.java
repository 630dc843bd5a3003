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
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The HTTP API: ledger queries for operators and dashboards, and health for orchestrators. */
public final class ApiVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ApiVerticle.class);
  private static final int MAX_LIMIT = 500;
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(3);

  private final GatewayConfig.Http http;
  private final byte[] adminToken;
  private HttpServer server;
  private Bus bus;

  public ApiVerticle(GatewayConfig.Http http, String adminToken) {
    this.http = http;
    this.adminToken = adminToken.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public Future<?> start() {
    bus = Bus.of(vertx);
    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    router.route("/api/*").handler(this::authenticate);
    new OperatorApi(bus).mount(router); // before /messages/:id, which would take "stale" for an id
    router.get("/api/v1/messages").handler(this::list);
    router.get("/api/v1/messages/:id").handler(this::detail);
    router.route().last().handler(ctx -> Problem.send(ctx, 404, "Not Found", "no such resource"));
    router.errorHandler(405, ctx -> Problem.send(ctx, 405, "Method Not Allowed", null));
    router.errorHandler(500, ctx -> {
      LOG.error("API request {} failed", ctx.request().path(), ctx.failure());
      Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
    });
    server = vertx.createHttpServer(new HttpServerOptions().setHost(http.host()).setPort(http.port()));
    return server.requestHandler(router).listen()
        .onSuccess(s -> LOG.info("HTTP API listening on {}:{}", http.host(), s.actualPort()));
  }

  public int actualPort() {
    return server.actualPort();
  }

  private void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    String prefix = "Bearer ";
    boolean ok = header != null && header.regionMatches(true, 0, prefix, 0, prefix.length())
        && MessageDigest.isEqual(header.substring(prefix.length()).trim().getBytes(StandardCharsets.UTF_8), adminToken);
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
        json(ctx, 200, new JsonObject().put("status", "UP").put("ledger", "UP"));
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
        json(ctx, 200, MessageJson.page(ar.result()));
      } else {
        ledgerFailure(ctx, ar.cause());
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
    String sender = ctx.queryParams().get("sender");
    return new ListQuery(status, sender == null || sender.isEmpty() ? null : sender, since, limit,
        ctx.queryParams().get("cursor"));
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
        json(ctx, 200, MessageJson.detail(ar.result()));
      } else {
        ledgerFailure(ctx, ar.cause());
      }
    });
  }

  private static void ledgerFailure(RoutingContext ctx, Throwable e) {
    if (e instanceof LedgerException le) {
      switch (le.kind()) {
        case NOT_FOUND -> Problem.send(ctx, 404, "Not Found", le.getMessage());
        case BAD_REQUEST -> Problem.send(ctx, 400, "Bad Request", le.getMessage());
        default -> Problem.send(ctx, 503, "Service Unavailable", "ledger unavailable: " + le.getMessage());
      }
      return;
    }
    LOG.error("ledger query failed", e);
    Problem.send(ctx, 503, "Service Unavailable", "ledger unavailable");
  }

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body.encode());
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.close();
  }
}
