package dev.ledgerpost.intake.http;

import dev.ledgerpost.platform.web.Bearer;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.intake.http.SendAnswers.Decided;
import dev.ledgerpost.intake.http.SendEnd.Broken;
import dev.ledgerpost.intake.http.SendEnd.Delivered;
import dev.ledgerpost.intake.http.SendEnd.RecipientsRefused;
import dev.ledgerpost.intake.http.SendEnd.SenderRefused;
import dev.ledgerpost.intake.http.SendEnd.Unavailable;
import dev.ledgerpost.intake.http.SendEnd.Verdict;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.capture.Capture;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.smarthost.SmarthostRelay;
import dev.ledgerpost.relay.smarthost.Smarthosts;
import dev.ledgerpost.relay.Submission;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claim;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claimed;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Done;
import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.Intake;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.ApiKeys.ApiKey;
import dev.ledgerpost.intake.http.InvalidSend;
import dev.ledgerpost.operate.suppression.RefusalMessages;
import dev.ledgerpost.operate.suppression.Suppressions;
import dev.ledgerpost.operate.quota.QuotaGate;
import dev.ledgerpost.ledger.LedgerMessages;
import io.vertx.core.json.JsonArray;
import dev.ledgerpost.intake.http.PreparedSend;
import dev.ledgerpost.platform.auth.RateLimiter;
import dev.ledgerpost.platform.tenants.FaultInjector;
import dev.ledgerpost.platform.tenants.FaultRule;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/v1/messages: a send through the same relay contract as SMTP (MAIL, RCPT mirrored, then
 * deliver: open the ledger, DATA, settle), answered once the downstream has answered, with an optional
 * Idempotency-Key that makes a retry safe. Lives on the API verticle's event loop, like its relay.
 */
public final class SendApi {
  private static final Logger LOG = LoggerFactory.getLogger(SendApi.class);
  static final String OPERATION = "sendMessage";
  static final String IDEMPOTENCY_KEY = "Idempotency-Key";
  private static final String API_KEY = "ledgerpost.apiKey";
  /** Room for JSON around a base64 message (which is 4/3 of the message). */
  private static final long JSON_OVERHEAD = 64 * 1024;

  /**
   * What the gateway hands every API instance's send API at start (keys were read on a worker): the same
   * objects for all of them, so that the rate limit per key, the running keys and the smarthost connection
   * cap hold per process, however many instances run.
   */
  public record Setup(GatewayConfig config, ApiKeys keys, String hostname, Smarthosts smarthosts, GatewayMetrics metrics,
      RateLimiter limiter, Set<UUID> running, Suppressions suppressions, Capture capture, QuotaGate quotas,
      FaultInjector faults) {

    public Setup(GatewayConfig config, ApiKeys keys, String hostname, Smarthosts smarthosts, GatewayMetrics metrics,
        RateLimiter limiter, Set<UUID> running, Suppressions suppressions, Capture capture) {
      this(config, keys, hostname, smarthosts, metrics, limiter, running, suppressions, capture, QuotaGate.none(),
          FaultInjector.none());
    }

    public Setup(GatewayConfig config, ApiKeys keys, String hostname, Smarthosts smarthosts, GatewayMetrics metrics,
        Suppressions suppressions, Capture capture) {
      this(config, keys, hostname, smarthosts, metrics, suppressions, capture, QuotaGate.none());
    }

    public Setup(GatewayConfig config, ApiKeys keys, String hostname, Smarthosts smarthosts, GatewayMetrics metrics,
        Suppressions suppressions, Capture capture, QuotaGate quotas) {
      this(config, keys, hostname, smarthosts, metrics, new RateLimiter(), java.util.concurrent.ConcurrentHashMap.newKeySet(),
          suppressions, capture, quotas, FaultInjector.none());
    }

    public Setup(GatewayConfig config, ApiKeys keys, String hostname, Smarthosts smarthosts, GatewayMetrics metrics,
        Suppressions suppressions) {
      this(config, keys, hostname, smarthosts, metrics, suppressions, Capture.off());
    }

    /** The same set-up with the captured users' fault rules (docs/design.md §8.11). */
    public Setup with(FaultInjector rules) {
      return new Setup(config, keys, hostname, smarthosts, metrics, limiter, running, suppressions, capture, quotas, rules);
    }
  }

  private final Vertx vertx;
  private final Bus bus;
  private final Suppressions suppressions;
  private final FaultInjector faults;
  private final QuotaGate quotas;
  private final ApiKeys keys;
  private final RateLimiter limiter;
  private final ContractValidation contract;
  private final SmarthostRelay relay;
  /** The relay a send runs through: {@link #relay}, but a captured user's sends never reach it (docs/design.md §8.10). */
  private final Relay capturing;
  /** A capturing key's sends: every one captured, whatever its user's setting. */
  private final Relay captured;
  private final String hostname;
  private final PreparedSend.Limits limits;
  private final long bodyLimit;
  private final Duration retention;
  private final Duration openLease;
  private int inFlight;
  /** Operation ids of the keyed requests running in this process (any instance): a 409 for one of them is a short wait. */
  private final Set<UUID> running;
  /** The embedded ledger is locked to this process: a key held by no request here is held by a dead one. */
  private final boolean exclusiveLedger;
  private Promise<Void> drained;

  public SendApi(Vertx vertx, Setup setup, ContractValidation contract) {
    this.running = setup.running();
    this.suppressions = setup.suppressions();
    this.faults = setup.faults();
    this.quotas = setup.quotas();
    this.limiter = setup.limiter();
    GatewayConfig config = setup.config();
    GatewayConfig.Downstream downstream = config.downstream();
    this.vertx = vertx;
    this.bus = Bus.of(vertx);
    this.keys = setup.keys();
    this.contract = contract;
    this.hostname = setup.hostname();
    this.relay = setup.smarthosts().relayOn(vertx);
    this.capturing = setup.capture().over(relay);
    this.captured = setup.capture().always(relay);
    long max = config.smtp().maxMessageSize();
    this.limits = new PreparedSend.Limits(max, config.smtp().maxRecipients());
    this.bodyLimit = max > (Long.MAX_VALUE - JSON_OVERHEAD) / 2 ? Long.MAX_VALUE : max / 3 * 4 + 4 + JSON_OVERHEAD;
    this.retention = config.api().idempotencyRetention();
    this.exclusiveLedger = config.ledger().embedded();
    // Leases only decide how long a key of a request that died with its process answers 409: safety
    // never rests on them (of two opens of one key exactly one binds it, in the statement that writes its entry).
    this.openLease = downstream.dataTimeout().plus(downstream.replyTimeout()).plusMinutes(1);
  }

  public void mount(Router router) {
    router.post("/api/v1/messages").handler(this::admit);
    router.post("/api/v1/messages") // vertx-web wants a body handler first in its route
        .handler(BodyHandler.create(false).setBodyLimit(bodyLimit))
        .handler(this::send)
        .failureHandler(this::failure);
  }

  /** The API key behind a request's bearer token, if it is one (not the admin token). */
  public Optional<ApiKey> apiKey(RoutingContext ctx) {
    return keys.authenticate(Bearer.token(ctx.request()));
  }

  /** Authentication and the rate limit come before the body is read: nobody unknown or too fast costs us memory. */
  private void admit(RoutingContext ctx) {
    Optional<ApiKey> key = apiKey(ctx);
    if (key.isEmpty()) {
      Problem.unauthorized(ctx, "ledgerpost-send", "a valid send API key is required as a bearer token");
      return;
    }
    long wait = limiter.acquire(key.get().id(), key.get().rate());
    if (wait > 0) {
      ctx.response().putHeader("Retry-After", String.valueOf(wait));
      Problem.send(ctx, 429, "Too Many Requests", "this API key sends at most " + key.get().rate()
          + " request(s) per second; retry after " + wait + " s");
      return;
    }
    if (drained != null) {
      SendAnswers.shuttingDown().write(ctx);
      return;
    }
    // This node's copy of the counters (docs/design.md §8.9): before the body is read; the open's own count decides.
    Optional<LedgerMessages.OverQuota> over = quotas.overQuota(key.get().user());
    if (over.isPresent()) {
      SendAnswers.overQuota(null, key.get().user(), over.get(), quotas.now()).write(ctx);
      return;
    }
    ctx.put(API_KEY, key.get());
    ctx.next();
  }

  private void send(RoutingContext ctx) {
    String type = ctx.request().getHeader("Content-Type");
    if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/json")) {
      Problem.send(ctx, 415, "Unsupported Media Type", "the body must be application/json");
      return;
    }
    contract.validate(ctx, OPERATION).onComplete(v -> {
      if (v.failed()) {
        contract.badRequest(ctx, v.cause());
        return;
      }
      prepare(ctx, ctx.get(API_KEY), v.result().body(), v.result().header(IDEMPOTENCY_KEY));
    });
  }

  private void prepare(RoutingContext ctx, ApiKey key, JsonObject body, String idempotencyKey) {
    UUID op = LedgerIds.next(); // the ledger id the message will have: known before anything happens
    vertx.executeBlocking(() -> PreparedSend.prepare(body, op, hostname, limits), false).onComplete(ar -> {
      if (ar.failed()) {
        refuse(ctx, ar.cause());
        return;
      }
      SendAnswer overLimit = SendAnswers.overLimits(ar.result(), key.user(), quotas.policy(key.user()));
      if (overLimit != null) {
        overLimit.write(ctx);
        return;
      }
      JsonArray suppressed = suppressed(ctx, ar.result(), key);
      if (!suppressed.isEmpty() && (!body.getBoolean("allowPartial", false)
          || suppressed.size() == ar.result().recipients().size())) {
        refuseSuppressed(suppressed, ar.result()).write(ctx);
        return;
      }
      // allowPartial: the rest go; the answer names the suppressed ones (a composed message's headers still do).
      PreparedSend prepared = suppressed.isEmpty() ? ar.result() : ar.result().without(addresses(suppressed));
      // Before the key is claimed: an injected fault leaves nothing behind, so the retry it asks for is a first try.
      faults(key.user(), prepared.recipients().size()).onComplete(f -> {
        if (f.result() != null) {
          SendAnswers.injected(f.result(), op).write(ctx);
        } else if (drained != null) { // the stop began during a delay
          SendAnswers.shuttingDown().write(ctx);
        } else {
          claimAndRelay(ctx, key, prepared, op, idempotencyKey, suppressed);
        }
      });
    });
  }

  /**
   * The key's user's fault rules (docs/design.md §8.11), met as the same mail would meet them over SMTP: MAIL, each
   * RCPT, DATA. Delays that fire add up (at most {@link FaultRule#MAX_DELAY}), waited on a timer; the first reply that
   * fires answers the request (after the delays before it). Null: go on.
   */
  private Future<FaultRule> faults(String user, int recipients) {
    Duration wait = Duration.ZERO;
    FaultRule reply = null;
    List<FaultRule.Stage> stages = new ArrayList<>();
    stages.add(FaultRule.Stage.MAIL);
    stages.addAll(java.util.Collections.nCopies(recipients, FaultRule.Stage.RCPT));
    stages.add(FaultRule.Stage.DATA);
    for (FaultRule.Stage stage : stages) {
      Optional<FaultRule> fired = faults.draw(user, stage, "send API");
      if (fired.isPresent() && fired.get().delays()) {
        wait = wait.plus(fired.get().delay());
      } else if (fired.isPresent()) {
        reply = fired.get();
        break;
      }
    }
    if (wait.isZero()) {
      return Future.succeededFuture(reply);
    }
    FaultRule answer = reply;
    long ms = Math.min(wait.toMillis(), FaultRule.MAX_DELAY.toMillis());
    return vertx.timer(ms).map(x -> answer);
  }

  private void claimAndRelay(RoutingContext ctx, ApiKey key, PreparedSend prepared, UUID op, String idempotencyKey,
      JsonArray suppressed) {
    if (idempotencyKey == null) {
      relay(ctx, key, prepared, op, null, suppressed);
      return;
    }
    KeyRef ref = new KeyRef(key.id(), idempotencyKey, op);
    running.add(op); // before the key can be bound: a duplicate must never take a live holder for a dead one
    // A read: the key is claimed and bound by the open's own group-committed statement (docs/design.md §7.2); what
    // the read finds taken is answered at once, without a downstream transaction.
    look(ref, prepared.requestHash()).onComplete(c -> {
      if (c.failed() || c.result().decision() != Decision.CLAIMED) {
        running.remove(op); // a claimant runs on in relay(), which forgets it when it ends
      }
      if (c.failed()) {
        LOG.warn("idempotency key of operation {} could not be claimed: {}", op, c.cause().getMessage());
        SendAnswers.keyUnavailable(op).write(ctx);
        return;
      }
      if (c.result().decision() == Decision.CLAIMED) {
        relay(ctx, key, prepared, op, ref, suppressed);
      } else {
        taken(c.result(), op).write(ctx);
      }
    });
  }

  /** What the key says now for a request with this body (IdempotencyStore.decide); CLAIMED: the open may take it. */
  private Future<Claimed> look(KeyRef ref, String requestHash) {
    return bus.request(IdempotencyMessages.CLAIM, new Claim(ref, requestHash, openLease, retention), Claimed.class);
  }

  /**
   * docs/design.md §7.3's answer for a key another request holds or answered. CLAIMED here means the key was free
   * again when read after this request's open found it held (its holder released it meanwhile): nothing was sent, and
   * the client's retry with the same key is a first try.
   */
  private SendAnswer taken(Claimed claimed, UUID op) {
    return switch (claimed.decision()) {
      case CLAIMED -> SendAnswers.keyUnavailable(op);
      case BUSY -> SendAnswers.inFlight(claimed.operationId(), holder(claimed.operationId()), claimed.leaseLeft(),
          Instant.now());
      case MISMATCH -> SendAnswers.keyReused(claimed.operationId());
      case REPLAY -> replay(claimed);
      case DERIVED -> SendAnswers.derived(claimed).replayed();
    };
  }

  /**
   * Every recipient the suppression list holds for this key's user (docs/design.md §8.8), each with why: checked before
   * the key is claimed and before the smarthost hears of any of them. Each is handed to the list's refusal log as a
   * refusal of the {@code http} door at RCPT (the whole request's 422, or a recipient {@code allowPartial} leaves out
   * alike): code 422, no enhanced status, the reason as the SMTP door's 550 says it. Queued, never waited for.
   */
  private JsonArray suppressed(RoutingContext ctx, PreparedSend p, ApiKey key) {
    JsonArray refused = new JsonArray();
    String ip = ctx.request().remoteAddress() == null ? null : ctx.request().remoteAddress().hostAddress();
    for (String r : p.recipients()) {
      suppressions.refusal(r, key.user(), GatewayMetrics.Channel.HTTP).ifPresent(e -> {
        refused.add(new JsonObject()
            .put("address", r).put("scope", e.scope()).put("reason", e.reason()).put("since", e.addedAt().toString())
            .put("ledgerId", e.messageId() == null ? null : e.messageId().toString()).put("suppression", e.id().toString()));
        String reply = "422 <" + r + "> suppressed since " + e.addedAt().withOffsetSameInstant(ZoneOffset.UTC).toLocalDate()
            + ": " + e.reason() + (e.messageId() == null ? "" : " (ledger " + e.messageId() + ")");
        suppressions.refusals().refused(new RefusalMessages.Refusal(OffsetDateTime.now(suppressions.clock()), key.user(), ip,
            p.mailFrom(), r, RefusalMessages.Stage.RCPT, GatewayMetrics.RefusalSource.SUPPRESSED, 422, null,
            oneLine(reply), e.id(), null, RefusalMessages.Door.HTTP));
      });
    }
    return refused;
  }

  /** Control characters as spaces: a reason or an address is recorded as one line. */
  private static String oneLine(String s) {
    StringBuilder b = new StringBuilder(s.length());
    s.chars().forEach(c -> b.append(c < 0x20 || c == 0x7f ? ' ' : (char) c));
    return b.toString();
  }

  private static java.util.Set<String> addresses(JsonArray suppressed) {
    java.util.Set<String> addresses = new java.util.HashSet<>();
    for (int i = 0; i < suppressed.size(); i++) {
      addresses.add(suppressed.getJsonObject(i).getString("address"));
    }
    return addresses;
  }

  /**
   * 422 naming the suppressed recipients: nothing is claimed, recorded or sent, and a retry gets the same answer until
   * the entries go. All or nothing like every other refusal of this API unless the request says {@code allowPartial}
   * (and then only when some recipient is left).
   */
  private static SendAnswer refuseSuppressed(JsonArray suppressed, PreparedSend p) {
    return SendAnswers.problem(422, "Unprocessable Content", suppressed.size() + " of " + p.recipients().size()
        + " recipient(s) are on the suppression list; nothing was sent", null, null, new JsonObject().put("suppressed", suppressed));
  }

  private SendAnswers.KeyHolder holder(UUID op) {
    if (running.contains(op)) {
      return SendAnswers.KeyHolder.HERE;
    }
    return exclusiveLedger ? SendAnswers.KeyHolder.GONE : SendAnswers.KeyHolder.ELSEWHERE;
  }

  private static SendAnswer replay(Claimed claimed) {
    SendAnswer stored;
    try {
      stored = SendAnswer.fromStored(claimed.response());
    } catch (RuntimeException e) {
      LOG.error("stored answer of operation {} cannot be read", claimed.operationId(), e);
      return SendAnswers.problem(500, "Internal Server Error", "the stored answer of this Idempotency-Key cannot be read; "
          + "query the operation, do not resend", claimed.operationId(), null, null);
    }
    return stored.replayed();
  }

  private void refuse(RoutingContext ctx, Throwable e) {
    if (e instanceof InvalidSend invalid) {
      String title = switch (invalid.status()) {
        case 413 -> "Content Too Large";
        case 422 -> "Unprocessable Content";
        default -> "Bad Request";
      };
      JsonObject extra = invalid.field() == null ? null : new JsonObject().put("field", invalid.field());
      SendAnswers.problem(invalid.status(), title, invalid.getMessage(), null, null, extra).write(ctx);
      return;
    }
    LOG.error("preparing a send failed", e);
    Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
  }

  /** docs/contract.md §1.2: MAIL, every RCPT mirrored, and only if all were accepted, deliver. */
  private void relay(RoutingContext ctx, ApiKey key, PreparedSend p, UUID op, KeyRef ref, JsonArray suppressed) {
    inFlight++;
    String ip = ctx.request().remoteAddress() == null ? "unknown" : ctx.request().remoteAddress().hostAddress();
    Submission submission = new Submission(Intake.HTTP, ip, null, key.user(), false, true);
    (key.capture() ? captured : capturing).begin(submission, p.mailFrom(), p.parameters())
        .compose(txn -> transaction(txn, p, op, ref, suppressed), e -> Future.succeededFuture(new Unavailable(e.getMessage())))
        .compose(end -> {
          if (end instanceof Delivered del && del.outcome() instanceof DeliveryOutcome.KeyHeld) {
            // The open found the key taken by another request since the look: answer as the look would have.
            return look(ref, p.requestHash()).map(c -> taken(c, op))
                .otherwise(e -> SendAnswers.keyUnavailable(op));
          }
          Decided d = decided(end, op, p, suppressed);
          return keyFate(ref, d, keyWritten(end)).map(d.answer());
        })
        .onComplete(ar -> {
          inFlight--;
          running.remove(op);
          if (ar.succeeded()) {
            ar.result().write(ctx);
          } else {
            LOG.error("send {} failed unexpectedly", op, ar.cause());
            Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
          }
          if (drained != null && inFlight == 0) {
            drained.tryComplete();
          }
        });
  }

  private static Decided decided(SendEnd end, UUID op, PreparedSend p, JsonArray suppressed) {
    return SendAnswers.noting(SendAnswers.forEnd(end, op, p.message().messageIdHeader()), "suppressed", suppressed);
  }

  /**
   * Whether this request's own key row may need its answer written here: not when the open never ran or wrote nothing
   * (the key was never written: nothing to release), nor when the settle committed, which stored the answer or released
   * the key in its own statement (docs/design.md §7.2).
   */
  private static boolean keyWritten(SendEnd end) {
    if (!(end instanceof Delivered d)) {
      return false;
    }
    return d.outcome().accept(new DeliveryOutcome.Visitor<Boolean>() {
      @Override
      public Boolean notRecorded(DeliveryOutcome.NotRecorded o) {
        return true; // its open may have committed: released as before (the retry part releases it too)
      }

      @Override
      public Boolean accepted(DeliveryOutcome.Accepted o) {
        return !o.settled();
      }

      @Override
      public Boolean deferred(DeliveryOutcome.Deferred o) {
        return !o.settled();
      }

      @Override
      public Boolean rejected(DeliveryOutcome.Rejected o) {
        return !o.settled();
      }

      @Override
      public Boolean lostBeforeDot(DeliveryOutcome.LostBeforeDot o) {
        return !o.settled();
      }

      @Override
      public Boolean unknown(DeliveryOutcome.Unknown o) {
        return !o.settled();
      }

      @Override
      public Boolean resubmitted(DeliveryOutcome.Resubmitted o) {
        return true;
      }

      @Override
      public Boolean overQuota(DeliveryOutcome.OverQuota o) {
        return false; // a refused open takes no key
      }

      @Override
      public Boolean keyHeld(DeliveryOutcome.KeyHeld o) {
        return false;
      }
    });
  }

  private Future<SendEnd> transaction(RelayTransaction txn, PreparedSend p, UUID op, KeyRef ref, JsonArray suppressed) {
    if (!txn.mailReply().positive()) {
      return Future.succeededFuture(new SenderRefused(txn.mailReply())); // a refused transaction holds no connection
    }
    return recipients(txn, p.recipients(), 0, new ArrayList<>()).compose(verdicts -> {
      if (verdicts.size() == p.recipients().size() && verdicts.stream().allMatch(v -> v.reply().positive())) {
        // A keyed send's settle stores the answer this request will give when the settle commits (§7.2).
        Opening opening = ref == null ? Opening.withId(op) : Opening.keyed(op, ref, p.requestHash(), openLease, retention,
            outcome -> {
              Decided d = decided(new Delivered(outcome), op, p, suppressed);
              return d.fate() == SendAnswers.KeyFate.STORE ? d.answer().stored() : null;
            });
        return txn.deliver(p.message(), opening)
            .<SendEnd>map(Delivered::new)
            .otherwise(Broken::new);
      }
      // All or nothing: a 2xx means every recipient has it. A partial send would leave the client to
      // resend to the refused ones with a new key, and every retry of the request would hit the same wall.
      return txn.abort().map(x -> new RecipientsRefused(List.copyOf(verdicts)));
    }, e -> txn.abort().map(x -> new Unavailable("downstream lost at RCPT: " + e.getMessage())));
  }

  /** RCPT one by one, each verdict kept; a 421 means the downstream hangs up, so no more are tried. */
  private Future<List<Verdict>> recipients(RelayTransaction txn, List<String> addresses, int i, List<Verdict> verdicts) {
    if (i == addresses.size()) {
      return Future.succeededFuture(verdicts);
    }
    return txn.rcpt(addresses.get(i)).compose(reply -> {
      verdicts.add(new Verdict(addresses.get(i), reply));
      return reply.code() == 421 ? Future.succeededFuture(verdicts) : recipients(txn, addresses, i + 1, verdicts);
    });
  }

  /**
   * Stores the answer of a key bound to a ledger entry, or frees a key whose send delivered nothing.
   * Never fails and never changes the answer: a failure here leaves the key to its lease and the ledger.
   */
  private Future<Void> keyFate(KeyRef ref, Decided d, boolean written) {
    if (ref == null || !written || d.fate() == SendAnswers.KeyFate.LEAVE) {
      return Future.succeededFuture();
    }
    Future<Done> done = d.fate() == SendAnswers.KeyFate.STORE
        ? bus.request(IdempotencyMessages.COMPLETE, new IdempotencyMessages.Complete(ref, d.answer().stored()), Done.class)
        : bus.request(IdempotencyMessages.RELEASE, new IdempotencyMessages.Release(ref), Done.class);
    return done.map(r -> {
      if (!r.changed()) {
        LOG.warn("idempotency key of operation {} was no longer held when its answer was to be {}", ref.operationId(),
            d.fate() == SendAnswers.KeyFate.STORE ? "stored" : "released");
      }
      return (Void) null;
    }).otherwise(e -> {
      LOG.warn("idempotency key of operation {}: answer not {} ({}); retries are answered from the ledger after its lease",
          ref.operationId(), d.fate() == SendAnswers.KeyFate.STORE ? "stored" : "released", e.getMessage());
      return null;
    });
  }

  /** The body handler's 413 (and anything else that failed the route) as problem JSON. */
  private void failure(RoutingContext ctx) {
    int status = ctx.statusCode();
    if (status == 413) {
      Problem.send(ctx, 413, "Content Too Large", "the request body is larger than " + bodyLimit + " bytes");
    } else if (status >= 400 && status < 500) {
      Problem.send(ctx, status, "Bad Request", null);
    } else {
      LOG.error("send request failed", ctx.failure());
      Problem.send(ctx, 500, "Internal Server Error", "see the gateway log");
    }
  }

  /**
   * No new sends; those in flight may finish within {@code grace}. Then the relay closes every smarthost connection
   * but those whose final dot is at the smarthost: the sends on them end with nothing delivered (answered 503), and
   * those past the final dot get their verdict, within {@code downstream.dataTimeout}, and its answer (issue 26: cut,
   * they went UNKNOWN). Waits at most {@code bound} for the last answer, then closes the connections.
   */
  public Future<Void> close(Duration grace, Duration bound) {
    drained = Promise.promise();
    if (inFlight == 0) {
      drained.tryComplete();
    }
    long timer = vertx.setTimer(Math.max(1, grace.toMillis()), t -> relay.stop());
    Future<Void> answered = drained.future().timeout(bound.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .otherwise((Void) null); // past the bound, the connections close regardless
    return answered.eventually(() -> {
      vertx.cancelTimer(timer);
      return relay.close();
    });
  }
}
