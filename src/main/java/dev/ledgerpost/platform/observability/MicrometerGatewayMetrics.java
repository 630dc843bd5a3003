package dev.ledgerpost.platform.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.DoubleSupplier;

/** {@link GatewayMetrics} on a Micrometer registry (Prometheus in production). Meters are built once and cached. */
public final class MicrometerGatewayMetrics implements GatewayMetrics {
  /** Reply codes a client can hear from us (RFC 5321's set); any other mirrored code is tagged "other". */
  private static final Set<Integer> KNOWN_CODES = Set.of(211, 214, 220, 221, 235, 250, 251, 252, 334, 354, 421, 450, 451,
      452, 454, 455, 500, 501, 502, 503, 504, 521, 530, 534, 535, 538, 550, 551, 552, 553, 554, 555, 556);
  private static final Set<String> RETRY_CAUSES = Set.of("55P03", "40001", "40P01", "connection");
  private static final Duration[] SLO = {
    Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(20),
    Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
    Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30)
  };

  private final MeterRegistry registry;
  /**
   * The reply counters by code (index {@code code - 100}, codes 100..599; "other" codes share their class's counter),
   * filled on first use: a reply is counted with one array read, without building its tags or a map key (issue 33's
   * profile had the lookup on every reply). Micrometer answers the meter already registered, so a race only repeats it.
   */
  private final AtomicReferenceArray<Counter> replies = new AtomicReferenceArray<>(500);
  private final Map<Stage, Timer> replyLatency = new EnumMap<>(Stage.class);
  private final Map<TxKind, Timer> transactions = new EnumMap<>(TxKind.class);
  private final Map<TxKind, Counter> failures = new EnumMap<>(TxKind.class);
  private final Map<String, Counter> retries = new ConcurrentHashMap<>();
  private final Map<Outcome, Counter> outcomes;
  private final Map<AuthFailure, Counter> authFailures;
  private final Map<RateLimit, Counter> rateLimits;
  private final Map<Resubmission, Counter> resubmissions;
  private final Map<Channel, Counter> suppressed;
  private final Map<RefusalSource, Counter> refused;
  private final Counter refusalsLost;
  private final Map<String, Counter> faults = new java.util.HashMap<>();
  private final Map<String, Counter> proposals = new ConcurrentHashMap<>();
  private final Map<BodyCommand, Counter> bodies;
  private final Map<BodyCommand, Counter> relayed;
  /** ledgerpost.tracking's counters by state, then bounce category ("none" for none). */
  private final Map<String, Map<String, Counter>> trackingFacts = new ConcurrentHashMap<>();
  private final Map<String, Counter> webhookAttempts = new ConcurrentHashMap<>();
  private final Timer delivery;
  /** The per-user counters (metrics.perUser), or null when off: then nothing is registered and a user event is one check. */
  private final PerUserMeters perUser;

  /** Without per-user counters (metrics.perUser false). */
  public MicrometerGatewayMetrics(MeterRegistry registry) {
    this(registry, 0);
  }

  /** {@code perUserMax} above 0: the per-user counters, with that many user labels at most; 0: none. */
  public MicrometerGatewayMetrics(MeterRegistry registry, int perUserMax) {
    this.registry = registry;
    this.perUser = perUserMax > 0 ? new PerUserMeters(registry, perUserMax) : null;
    for (Stage s : Stage.values()) {
      replyLatency.put(s, histogram("ledgerpost.smtp.reply", "Time from a complete command (or final dot) to its reply",
          "stage", s));
    }
    for (TxKind k : TxKind.values()) {
      transactions.put(k, histogram("ledgerpost.ledger.transaction", "Ledger transactions, retries included", "kind", k));
      failures.put(k, Counter.builder("ledgerpost.ledger.failures").description("Ledger transactions that failed after their retries")
          .tag("kind", tag(k)).register(registry));
    }
    outcomes = counters(Outcome.class, "ledgerpost.delivery.outcomes", "Messages by what happened after DATA", "outcome");
    authFailures = counters(AuthFailure.class, "ledgerpost.auth.failures",
        "Failed SMTP AUTH attempts: rejected (535), banned (the failure that began a ban), refused (while banned)", "result");
    resubmissions = counters(Resubmission.class, "ledgerpost.resubmissions",
        "Client retries recognised as resubmissions of an earlier row, by what they got", "outcome");
    suppressed = counters(Channel.class, "ledgerpost.suppressed",
        "Recipients refused because the suppression list holds them, by door: smtp (550 at RCPT), http (422)", "channel");
    refused = counters(RefusalSource.class, "ledgerpost.recipient.refusals",
        "Refused recipients handed to the refusal log, by source: suppressed (the list), smarthost (its RCPT or DATA reply)", "source");
    refusalsLost = Counter.builder("ledgerpost.recipient.refusals.lost")
        .description("Refused recipients not recorded in recipient_refusals: the queue was full or the database did not take the batch")
        .register(registry);
    for (FaultStage st : FaultStage.values()) {
      for (FaultKind k : FaultKind.values()) {
        faults.put(st.name() + k.name(), Counter.builder("ledgerpost.faults.injected")
            .description("Faults injected for captured users by their tenants file rules, by stage (mail, rcpt, data) "
                + "and kind (reply, delay)")
            .tag("stage", tag(st)).tag("kind", tag(k)).register(registry));
      }
    }
    rateLimits = counters(RateLimit.class, "ledgerpost.auth.rate.limit",
        "MAIL commands of authenticated users under auth.rateLimit, by outcome", "outcome");
    for (ProposalConfidence c : ProposalConfidence.values()) {
      for (ProposalOutcome o : ProposalOutcome.values()) {
        proposals.put(c.name() + o.name(), Counter.builder("ledgerpost.reconcile.proposals")
            .description("Reconcile proposals written by this node, by confidence and outcome")
            .tag("confidence", tag(c)).tag("outcome", tag(o)).register(registry));
      }
    }
    bodies = counters(BodyCommand.class, "ledgerpost.smtp.transactions",
        "SMTP message bodies received whole, by the command that carried them: data, bdat (RFC 3030)", "command");
    relayed = counters(BodyCommand.class, "ledgerpost.downstream.transactions",
        "Message bodies sent to the smarthost, by command: data, bdat (when it offers CHUNKING)", "command");
    for (String cause : RETRY_CAUSES) {
      retries.put(cause, Counter.builder("ledgerpost.ledger.retries").description("Whole-transaction retries by SQLSTATE")
          .tag("sqlstate", cause).register(registry));
    }
    delivery = Timer.builder("ledgerpost.delivery").description("From the client's final dot to the outcome: open, send, settle")
        .publishPercentileHistogram().serviceLevelObjectives(SLO).register(registry);
  }

  public MeterRegistry registry() {
    return registry;
  }

  private Timer histogram(String name, String help, String tagKey, Enum<?> tagValue) {
    return Timer.builder(name).description(help).tag(tagKey, tag(tagValue))
        .publishPercentileHistogram().serviceLevelObjectives(SLO).register(registry);
  }

  /** One counter of the family {@code name} per value of {@code type}, tagged {@code tagKey}: every series from the start. */
  private <E extends Enum<E>> Map<E, Counter> counters(Class<E> type, String name, String help, String tagKey) {
    Map<E, Counter> counters = new EnumMap<>(type);
    for (E e : type.getEnumConstants()) {
      counters.put(e, Counter.builder(name).description(help).tag(tagKey, tag(e)).register(registry));
    }
    return counters;
  }

  private static String tag(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }

  @Override
  public void smtpReply(int code, Stage stage, long nanos) {
    replyCounter(code).increment();
    if (nanos >= 0) {
      replyLatency.get(stage).record(nanos, TimeUnit.NANOSECONDS);
    }
  }

  private Counter replyCounter(int code) {
    int slot = code - 100;
    if (slot < 0 || slot >= replies.length()) {
      return replyMeter(code); // not an SMTP code: never cached (no client hears one), looked up as before
    }
    Counter c = replies.get(slot);
    if (c == null) {
      c = replyMeter(code);
      replies.set(slot, c);
    }
    return c;
  }

  private Counter replyMeter(int code) {
    String codeTag = KNOWN_CODES.contains(code) ? String.valueOf(code) : "other";
    return Counter.builder("ledgerpost.smtp.replies").description("SMTP replies sent to clients")
        .tag("class", (code / 100) + "xx").tag("code", codeTag).register(registry);
  }

  @Override
  public void ledgerTransaction(TxKind kind, long nanos, boolean succeeded) {
    transactions.get(kind).record(nanos, TimeUnit.NANOSECONDS);
    if (!succeeded) {
      failures.get(kind).increment();
    }
  }

  @Override
  public void ledgerRetry(String cause) {
    Counter c = retries.get(cause);
    if (c != null) {
      c.increment();
    }
  }

  @Override
  public void delivery(Outcome outcome, long nanos) {
    outcomes.get(outcome).increment();
    delivery.record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void userMessage(String user, Outcome outcome) {
    if (perUser != null) {
      perUser.message(user, outcome);
    }
  }

  @Override
  public void userQuotaRefusal(String user) {
    if (perUser != null) {
      perUser.quotaRefusal(user);
    }
  }

  @Override
  public void authFailure(AuthFailure result) {
    authFailures.get(result).increment();
  }

  @Override
  public void resubmission(Resubmission outcome) {
    resubmissions.get(outcome).increment();
  }

  @Override
  public void suppressed(Channel channel) {
    suppressed.get(channel).increment();
  }

  @Override
  public void recipientRefused(RefusalSource source) {
    refused.get(source).increment();
  }

  @Override
  public void refusalsLost(int count) {
    refusalsLost.increment(count);
  }

  @Override
  public void trackingFact(String state, String category) {
    // Made on first use and kept (a fact per delivery attempt: no tags built each time); the states and categories
    // are closed lists, so the cache is bounded.
    String cat = category == null ? "none" : category;
    Map<String, Counter> byCategory = trackingFacts.computeIfAbsent(state, k -> new ConcurrentHashMap<>());
    Counter c = byCategory.get(cat);
    if (c == null) {
      c = byCategory.computeIfAbsent(cat, k -> Counter.builder("ledgerpost.tracking")
          .description("Tracking facts recorded, by state and bounce category").tag("state", state).tag("category", k)
          .register(registry));
    }
    c.increment();
  }

  @Override
  public void trackingDsn(String result) {
    Counter.builder("ledgerpost.tracking.dsn").description("Returned DSNs handled, by result (matched, unmatched, malformed, expired, looped)")
        .tag("result", result).register(registry).increment();
  }

  @Override
  public void trackingDownstreamError(String kind) {
    Counter.builder("ledgerpost.tracking.downstream.errors")
        .description("Requests to the downstream Ledgerpost for its tracking facts that failed, by kind (unreachable, unauthorized, not-found, status, malformed)")
        .tag("kind", kind).register(registry).increment();
  }

  @Override
  public void faultInjected(FaultStage stage, FaultKind kind) {
    faults.get(stage.name() + kind.name()).increment();
  }

  @Override
  public void userRateLimit(RateLimit outcome) {
    rateLimits.get(outcome).increment();
  }

  @Override
  public void reconcileProposal(ProposalConfidence confidence, ProposalOutcome outcome) {
    proposals.get(confidence.name() + outcome.name()).increment();
  }

  @Override
  public void smtpTransaction(BodyCommand command) {
    bodies.get(command).increment();
  }

  @Override
  public void downstreamTransaction(BodyCommand command) {
    relayed.get(command).increment();
  }

  @Override
  public void webhookAttempt(String endpoint, WebhookResult result) {
    webhookCounter(endpoint, result).increment();
  }

  private Counter webhookCounter(String endpoint, WebhookResult result) {
    return webhookAttempts.computeIfAbsent(endpoint + "\n" + tag(result), k -> Counter.builder("ledgerpost.webhook.deliveries")
        .description("Webhook attempts by endpoint and how they ended: delivered, retrying, failed (the last attempt), gone (410)")
        .tag("endpoint", endpoint).tag("result", tag(result)).register(registry));
  }

  @Override
  public void webhookEndpoint(String endpoint) {
    for (WebhookResult r : WebhookResult.values()) {
      webhookCounter(endpoint, r);
    }
  }

  @Override
  public void gauge(String name, String help, DoubleSupplier value) {
    Gauge.builder(name, value::getAsDouble).description(help).strongReference(true).register(registry);
  }

  @Override
  public void gauge(String name, String help, String tagKey, String tagValue, DoubleSupplier value) {
    Gauge.builder(name, value::getAsDouble).description(help).tag(tagKey, tagValue).strongReference(true).register(registry);
  }
}
