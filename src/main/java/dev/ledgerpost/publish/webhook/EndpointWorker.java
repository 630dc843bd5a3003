package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.observability.GatewayMetrics.WebhookResult;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deliveries of one endpoint on this node: claims due rows (never more than the endpoint's free slots across
 * the cluster, {@link WebhookStore#claim}, nor more than its rate limit's bucket holds), sends each, and records how
 * it ended with what follows from it: the exhausted event, the endpoint's health, its disabling (docs/design.md
 * §6.6). Each endpoint has its own worker and HTTP client, so one slow endpoint never holds up another. Runs on the
 * webhook verticle's context only.
 */
final class EndpointWorker {
  private static final Logger LOG = LoggerFactory.getLogger(EndpointWorker.class);
  /** A result that cannot be written is tried this often, a second apart; then the lease runs out and the row is sent again. */
  private static final int RESULT_TRIES = 5;

  /** What the worker needs from its part: the shared settings and services. */
  record Setup(Vertx vertx, WebhookStore store, Schedule schedule, Clock clock, String nodeId, int concurrency,
      Duration lease, GatewayMetrics metrics, Duration disableAfter) {}

  private final Setup s;
  private final GatewayConfig.WebhookEndpoint endpoint;
  private final Signer signer;
  private final Sender sender;
  private int inFlight;
  private boolean claiming;
  private boolean again;
  private boolean stopped;
  private volatile long passes;
  private long lastProblemLog;
  private Promise<Void> drained;
  /** Requests per second across every node (0: none); an API endpoint's own, or webhooks.rateLimit. */
  private volatile int rate;
  /** A pump is set for when the rate limit's bucket has a token again. */
  private boolean heldBack;

  EndpointWorker(Setup setup, GatewayConfig.WebhookEndpoint endpoint, Signer signer, Sender sender) {
    this.s = setup;
    this.endpoint = endpoint;
    this.signer = signer;
    this.sender = sender;
  }

  String name() {
    return endpoint.name();
  }

  GatewayConfig.WebhookEndpoint endpoint() {
    return endpoint;
  }

  Signer signer() {
    return signer;
  }

  int rate() {
    return rate;
  }

  /** The rate limit as its endpoint's row says now (a change through the API needs no new worker). */
  void rate(int perSecond) {
    rate = perSecond;
  }

  /** Claim passes that completed (tests wait for one that began after they moved the clock). */
  long passes() {
    return passes;
  }

  /** Claims what is due now, in the free slots, unless a claim is under way (then once more after it). */
  void pump() {
    if (stopped) {
      return;
    }
    if (claiming) {
      again = true;
      return;
    }
    if (inFlight >= s.concurrency()) {
      return;
    }
    claiming = true;
    again = false;
    s.store().claim(endpoint.name(), s.nodeId(), s.clock().instant(), s.concurrency(), s.lease(), rate).onComplete(ar -> {
      claiming = false;
      passes++;
      if (ar.failed()) {
        problem("webhook endpoint {}: cannot claim deliveries yet: {}", endpoint.name(), ar.cause().getMessage());
        return;
      }
      List<WebhookStore.Claimed> claimed = ar.result().claimed();
      holdBack(ar.result().heldMillis());
      for (WebhookStore.Claimed c : claimed) {
        attempt(c);
      }
      if (again || (!claimed.isEmpty() && inFlight < s.concurrency())) {
        pump();
      }
    });
  }

  /** Rows the rate limit held back stay due: claim again when the bucket has a token, not at the next poll. */
  private void holdBack(long millis) {
    if (millis <= 0 || heldBack || stopped) {
      return;
    }
    heldBack = true;
    s.vertx().setTimer(millis, t -> {
      heldBack = false;
      pump();
    });
  }

  private void attempt(WebhookStore.Claimed c) {
    inFlight++;
    Instant started = s.clock().instant();
    long timestamp = started.getEpochSecond();
    sender.post(c.eventId(), timestamp, signer.sign(c.eventId(), timestamp, c.body()), c.body())
        .compose(outcome -> record(c, started, outcome))
        .onComplete(ar -> {
          inFlight--;
          if (stopped && inFlight == 0 && drained != null) {
            drained.tryComplete();
          }
          pump();
        });
  }

  /** The row's next state from how the attempt ended (docs/design.md §6.6), recorded with the attempt. */
  private Future<Void> record(WebhookStore.Claimed c, Instant started, Sender.Outcome o) {
    Instant now = s.clock().instant();
    String state;
    Instant next = null;
    boolean givesBack = false;
    String disable = null;
    WebhookResult result;
    if (o.delivered()) {
      state = "DELIVERED";
      result = WebhookResult.DELIVERED;
    } else if (o.status() != null && o.status() == 410) {
      // The endpoint is gone, not this event: it waits (its attempt given back to the schedule) until re-enabled.
      state = "ATTEMPTED";
      next = now;
      givesBack = true;
      disable = "410 Gone at " + now + " (delivery " + c.id() + ", " + c.eventId() + ")";
      result = WebhookResult.GONE;
      LOG.warn("webhook endpoint {} answered 410 Gone: disabled until POST /api/v1/webhooks/{}/enable", endpoint.name(),
          endpoint.name());
    } else {
      next = s.schedule().next(c.round(), now, o.retryAfter());
      state = next == null ? "FAILED" : "ATTEMPTED";
      result = next == null ? WebhookResult.FAILED : WebhookResult.RETRYING;
      if (next == null) {
        LOG.warn("webhook delivery {} of {} to {} FAILED after {} attempt(s): {}", c.id(), c.eventId(), endpoint.name(),
            c.round(), o.error());
      }
    }
    s.metrics().webhookAttempt(endpoint.name(), result);
    WebhookStore.Result r = new WebhookStore.Result(c.id(), c.attempt(), s.nodeId(), started, o.status(),
        o.error(), o.nanos() / 1e6, state, next, givesBack, now, disable, c.messageId(), c.eventId());
    return write(r, 1);
  }

  private Future<Void> write(WebhookStore.Result r, int tryNo) {
    return s.store().result(endpoint.name(), endpoint.user(), r, r.now().minus(s.disableAfter())).<Void>map(ended -> {
      if (!ended.moved()) {
        LOG.info("webhook delivery {} attempt {}: recorded; the row had been taken over meanwhile", r.id(), r.attempt());
      }
      if (ended.exhausted() || ended.disabledKind() != null) {
        // Their events are outbox rows of this transaction: the publisher takes them now rather than at its next poll.
        Bus.of(s.vertx()).publish(OutboxMessages.WAKE, new OutboxMessages.Wake());
      }
      if ("failing".equals(ended.disabledKind())) {
        LOG.warn("webhook endpoint {} disabled: every attempt failed for webhooks.disableAfter ({}); its open deliveries "
            + "are FAILED; enabling it (PATCH {\"enabled\": true}, or POST /api/v1/webhooks/{}/enable) replays nothing "
            + "unless asked", endpoint.name(), s.disableAfter(), endpoint.name());
      }
      if (ended.disabledKind() != null) {
        AuditLog.of(AuditEvent.WEBHOOK_ENDPOINT_DISABLED).with("endpoint", endpoint.name())
            .with("kind", ended.disabledKind()).with("delivery", r.id()).with("error", r.error()).log();
      }
      return null;
    }).recover(e -> {
      if (tryNo >= RESULT_TRIES || stopped) {
        problem("webhook delivery {} attempt {}: its result could not be recorded ({}); it is sent again once its lease ends",
            r.id(), r.attempt(), e.getMessage());
        return Future.succeededFuture();
      }
      return s.vertx().timer(1000).compose(x -> write(r, tryNo + 1));
    });
  }

  /** Stops claiming; answers when the attempts in flight have ended (each is bounded by webhooks.timeout). */
  Future<Void> stop() {
    stopped = true;
    if (inFlight == 0) {
      return sender.close();
    }
    drained = Promise.promise();
    return drained.future().eventually(sender::close);
  }

  private void problem(String format, Object... args) {
    long now = System.currentTimeMillis();
    if (now - lastProblemLog > 60_000) {
      lastProblemLog = now;
      LOG.warn(format, args);
    }
  }
}
