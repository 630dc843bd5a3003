package dev.ledgerpost.api;

import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.web.Bearer;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP API: health for orchestrators, metrics, the operator console, and every part's routes (sends for
 * applications, the hub's WebSocket, ledger queries and decisions for operators), each part's own face mounted here.
 */
public final class ApiVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ApiVerticle.class);

  /**
   * What every instance of the API shares, one per process: the configuration, the admin token (read through its
   * reloadable holder, SIGHUP), the metrics' scrape, and the parts whose routes and readiness it serves.
   */
  public record Shared(GatewayConfig config, EventTokens eventTokens, Supplier<String> scrape, List<Part> parts) {}

  private final int port;
  private final Shared shared;
  private final List<HttpFace> faces = new ArrayList<>();
  private HttpServer server;

  /**
   * One of the API's instances; every instance binds the same {@code port} (for a configured 0, one negative
   * number that Vert.x reads as "one random port shared by every server that names it"), so that Vert.x
   * shares one listening socket between them and spreads the connections over them.
   */
  public ApiVerticle(int port, Shared shared) {
    this.port = port;
    this.shared = shared;
  }

  @Override
  public Future<?> start() {
    return ConsoleFiles.load(vertx).compose(console -> ContractValidation.load(vertx).compose(contract -> start(contract, console)));
  }

  private Future<?> start(ContractValidation contract, ConsoleFiles console) {
    GatewayConfig.Observability observability = shared.config().observability();
    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> Problem.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    if (observability.metricsAccess() == GatewayConfig.MetricsAccess.PUBLIC) {
      router.get("/metrics").handler(this::metrics);
    } else if (observability.metricsAccess() == GatewayConfig.MetricsAccess.TOKEN) {
      router.get("/metrics").handler(this::authenticate).handler(this::metrics);
    }
    console.mount(router); // static files, no token: the console asks for it and sends it to the API
    HttpFace.Api api = new HttpFace.Api(vertx, contract);
    for (Part part : shared.parts()) {
      part.http(api).ifPresent(faces::add);
    }
    faces.forEach(face -> face.open(router)); // public, or authenticating themselves
    router.route("/api/*").handler(this::authenticate);
    router.route("/api/*").handler(BodyHandler.create(false).setBodyLimit(HttpFace.ADMIN_BODY_LIMIT)).handler(contract::handle);
    faces.forEach(face -> face.admin(router));
    router.route().last().handler(ctx -> Problem.send(ctx, 404, "Not Found", "no such resource"));
    router.errorHandler(405, ctx -> Problem.send(ctx, 405, "Method Not Allowed", null));
    router.errorHandler(413, ctx -> Problem.send(ctx, 413, "Content Too Large", "the request body is too large"));
    router.errorHandler(500, ctx -> {
      LOG.error("API request {} failed", ctx.request().path(), ctx.failure());
      Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
    });
    GatewayConfig.Http http = shared.config().http();
    server = vertx.createHttpServer(new HttpServerOptions().setHost(http.host()).setPort(port));
    return server.requestHandler(router).listen()
        .onSuccess(s -> LOG.info("HTTP API listening on {}:{}", http.host(), s.actualPort()));
  }

  public int actualPort() {
    return server.actualPort();
  }

  private void authenticate(RoutingContext ctx) {
    String token = Bearer.token(ctx.request());
    if (token == null || !shared.eventTokens().isAdmin(token)) {
      Problem.unauthorized(ctx, "ledgerpost", "a valid bearer token is required");
      return;
    }
    ctx.next();
  }

  /**
   * Ready when every part with a readiness check passes it, each such part named "UP" in the answer; the first that
   * fails makes it 503, with that part's reason. The parts' remarks that leave the gateway ready (a nearly full disk, no
   * synchronous standby) are the answer's reason, joined by "; " in the parts' order: one must not hide another.
   */
  private void ready(RoutingContext ctx) {
    List<Part> checked = shared.parts().stream().filter(p -> p.readiness().isPresent()).toList();
    List<Future<Void>> checks = checked.stream().map(p -> p.readiness().get().check()).toList();
    Future.join(checks).onComplete(ar -> {
      JsonObject body = new JsonObject().put("status", "UP");
      for (int i = 0; i < checks.size(); i++) {
        if (checks.get(i).failed()) {
          Problem.send(ctx, 503, "Service Unavailable", checks.get(i).cause().getMessage());
          return;
        }
        body.put(checked.get(i).name(), "UP");
      }
      String reason = shared.parts().stream().map(Part::readinessRemark).flatMap(Optional::stream)
          .collect(Collectors.joining("; "));
      if (!reason.isEmpty()) {
        body.put("reason", reason);
      }
      Problem.json(ctx, 200, body);
    });
  }

  private void metrics(RoutingContext ctx) {
    ctx.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8").end(shared.scrape().get());
  }

  /** What the parts' faces wait for (sends in flight), then the listener. */
  @Override
  public Future<?> stop() {
    Future<Void> faced = Future.join(faces.stream().map(HttpFace::stop).toList()).mapEmpty();
    return faced.eventually(() -> server == null ? Future.succeededFuture() : server.close());
  }
}
