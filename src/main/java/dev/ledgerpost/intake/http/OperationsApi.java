package dev.ledgerpost.intake.http;

import dev.ledgerpost.operate.resolutions.MessagesApi;
import dev.ledgerpost.operate.resolutions.OperatorMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.web.Bearer;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.publish.hub.NotifyHub;
import dev.ledgerpost.publish.webhook.WebhookApi;
import dev.ledgerpost.publish.webhook.WebhookMessages;
import dev.ledgerpost.relay.retry.RetryMessages;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import dev.ledgerpost.platform.part.HttpFace;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * {@code GET /api/v1/operations/{id}} (docs/contract.md §1.11): what is known of one submission, fact by fact, each saying
 * where it was read from. For the admin token, and for a send API key following the Location of its own sends.
 */
final class OperationsApi {
  private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(3);
  /** Set when a send API key (not the admin token) reads an operation: the user it may see. */
  private static final String READER = "ledgerpost.operationReader";

  private final Bus bus;
  private final GatewayConfig config;
  /** This node's id, computed once at start (node.id may need the host's name: a lookup no event loop may wait for). */
  private final String nodeId;
  private final EventTokens tokens;
  private final NotifyHub hub;
  private final SendApi send;
  private final ContractValidation contract;

  OperationsApi(Bus bus, GatewayConfig config, String nodeId, EventTokens tokens, NotifyHub hub, SendApi send, ContractValidation contract) {
    this.bus = bus;
    this.config = config;
    this.nodeId = nodeId;
    this.tokens = tokens;
    this.hub = hub;
    this.send = send;
    this.contract = contract;
  }

  /**
   * Before the admin check of {@code /api/*}: the route authenticates itself, then reads the body as every admin route
   * does (a GET's body over the limit is 413 there too) and the contract checks it.
   */
  void mount(Router router) {
    router.get("/api/v1/operations/:id").handler(this::authenticate); // a route's body handler must be its first
    router.get("/api/v1/operations/:id").handler(BodyHandler.create(false).setBodyLimit(HttpFace.ADMIN_BODY_LIMIT))
        .handler(contract::handle).handler(this::operation);
  }

  private void authenticate(RoutingContext ctx) {
    String token = Bearer.token(ctx.request());
    if (token != null && tokens.isAdmin(token)) {
      ctx.next();
      return;
    }
    // A send API key may follow the Location of its own sends; operation() checks the message is its user's.
    var key = send.apiKey(ctx);
    if (key.isPresent()) {
      ctx.put(READER, key.get().user());
      ctx.next();
      return;
    }
    Problem.unauthorized(ctx, "ledgerpost", "a valid bearer token is required");
  }

  private void operation(RoutingContext ctx) {
    UUID id = UUID.fromString(Input.of(ctx).path("id"));
    Future<Boolean> retrying = bus.request(RetryMessages.HELD, new RetryMessages.HeldQuery(), RetryMessages.HeldOutcomes.class,
            ANSWER_TIMEOUT)
        .map(held -> held.ids().contains(id));
    Future<WebhookMessages.MessageDeliveries> webhooks = bus.request(WebhookMessages.FOR_MESSAGE,
        new WebhookMessages.ForMessage(id), WebhookMessages.MessageDeliveries.class, ANSWER_TIMEOUT);
    Future<List<ProposalView>> proposals = MessagesApi.proposals(bus, id);
    bus.request(OperatorMessages.OPERATION, new OperatorMessages.Operation(id, config.node().deadAfter()),
            OperatorMessages.OperationFacts.class)
        .compose(facts -> proposals.map(p -> facts))
        .onComplete(ar -> {
          if (ar.failed()) {
            Problem.ledgerFailure(ctx, ar.cause());
            return;
          }
          String reader = ctx.get(READER);
          if (reader != null && !reader.equals(ar.result().message().authUser())) {
            Problem.send(ctx, 404, "Not Found", "no message " + id); // another user's message does not exist for this key
            return;
          }
          // This node's retry part answers for itself (fresher than its heartbeat), the others' heartbeats for them;
          // if it cannot answer and no other node holds the outcome, say so rather than guess.
          Future.join(retrying, webhooks).onComplete(done -> {
            String self = nodeId;
            List<String> on = new ArrayList<>(ar.result().heldBy());
            boolean selfOnHeartbeat = on.remove(self);
            if (retrying.succeeded() ? retrying.result() : selfOnHeartbeat) {
              on.add(0, self);
            }
            Boolean held = !on.isEmpty() ? Boolean.TRUE : retrying.succeeded() ? Boolean.FALSE : null;
            Problem.json(ctx, 200, OperationJson.of(ar.result(), proposals.result(), held, on, hub.attempts(id))
                .put("webhooks", webhooks.succeeded() ? WebhookApi.forOperation(webhooks.result().deliveries()) : null));
          });
        });
  }
}
