package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.operate.reconcile.ReconcileMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accept;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accepted;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.CandidateQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidates;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Claimed;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ClaimedQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Confidence;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Counts;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.CountsQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Propose;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Proposed;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.retry.RetryMessages;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reconcile job (docs/design.md §8.4), run by the one node that leads {@link Job#RECONCILE}. Every
 * {@code reconcile.interval} it takes the UNKNOWN rows and the PENDING rows older than {@code reconcile.pendingAge}
 * that no live node's retry part holds, asks every evidence source what the smarthost did with them, and writes a
 * proposal for each row the evidence fits ({@code reconcile_proposals}, with a {@code message.reconcile_proposed}
 * outbox event). With {@code reconcile.autoResolve: exact} it accepts an exact proposal itself, which resolves the row
 * through the resolution path an operator uses ({@code reconcile:<source>}). It reads logs and asks APIs; it never
 * sends mail.
 *
 * <p>Every node counts, for its gauges, the open proposals and the rows still unknown (no open proposal).
 */
public final class ReconcileVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ReconcileVerticle.class);
  /** Rows looked at per pass; the next pass goes on after the last one (a cursor), so none is starved. */
  static final int BATCH = 200;
  private static final Duration HELD_TIMEOUT = Duration.ofSeconds(3);

  private final NodeServices node;
  /** Where its SQL ({@link ReconcileStore}) runs, on this verticle's context. */
  private final Database db;
  private final GatewayConfig config;
  private final List<EvidenceSource> sources = new ArrayList<>();
  /** Rows that had no evidence: when to look again. */
  private final Backoff backoff;
  /** Per source, when its last failure was logged (one line a minute while it fails). */
  private final Map<String, Long> failureLogged = new HashMap<>();
  private Bus bus;
  private UUID cursor;
  private boolean running;
  private JobSchedule schedule;
  private final java.util.concurrent.atomic.AtomicLong passes = new java.util.concurrent.atomic.AtomicLong();
  private volatile long openProposals;
  private volatile long unresolved;

  public ReconcileVerticle(NodeServices node, Database db) {
    this.node = node;
    this.db = db;
    this.config = node.config();
    this.backoff = new Backoff(config.reconcile().interval());
  }

  @Override
  public Future<?> start() {
    bus = Bus.of(vertx);
    new ReconcileStore(db, bus);
    sources.add(new LedgerFacts());
    for (GatewayConfig.ReconcileSource s : config.reconcile().sources()) {
      sources.add(s.type() == GatewayConfig.SourceType.POSTFIX_LOG ? new PostfixLogSource(vertx, s) : new LedgerpostSource(vertx, s));
    }
    node.metrics().gauge("ledgerpost.reconcile.open.proposals", "Reconcile proposals waiting for an operator (ledger-wide)",
        () -> openProposals);
    node.metrics().gauge("ledgerpost.reconcile.unresolved.messages",
        "UNKNOWN rows and PENDING rows older than reconcile.pendingAge without an open proposal (ledger-wide)", () -> unresolved);
    schedule = new JobSchedule(vertx, node.leadership());
    schedule.every(config.reconcile().interval(), this::count); // every node's gauges
    count();
    schedule.lead(Job.RECONCILE, config.reconcile().interval(), this::pass); // a node that takes the job over looks at once
    LOG.info("reconcile job ready on node {}: sources {}, autoResolve {}, every {}", node.nodeId(),
        sources.stream().map(EvidenceSource::name).toList(), config.reconcile().autoResolve().name().toLowerCase(),
        config.reconcile().interval());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    List<Future<Void>> closing = new ArrayList<>();
    for (EvidenceSource s : sources) {
      if (s instanceof LedgerpostSource l) {
        closing.add(l.close());
      }
    }
    return Future.join(closing);
  }

  /** Passes completed (whether or not this node led), for tests. */
  public long passes() {
    return passes.get();
  }

  private void count() {
    bus.request(ReconcileMessages.COUNTS, new CountsQuery(pendingBefore()), Counts.class)
        .onSuccess(c -> {
          openProposals = c.openProposals();
          unresolved = c.unresolved();
        })
        .onFailure(e -> LOG.debug("reconcile counts not refreshed: {}", e.getMessage()));
  }

  /** One pass; never overlaps itself, and does nothing on a node that does not lead the job. */
  Future<Void> pass() {
    if (running || schedule.stopped() || !node.leadership().leads(Job.RECONCILE)) {
      return Future.succeededFuture();
    }
    running = true;
    return held()
        .compose(held -> bus.request(ReconcileMessages.CANDIDATES, new CandidateQuery(pendingBefore(), held,
            config.node().deadAfter(), cursor, BATCH), Candidates.class))
        .compose(found -> {
          cursor = found.rows().size() < BATCH ? null : found.rows().get(found.rows().size() - 1).id();
          Instant now = node.clock().instant();
          List<Candidate> due = found.rows().stream().filter(c -> backoff.due(c.id(), now)).toList();
          return due.isEmpty() ? Future.<Void>succeededFuture() : reconcile(due);
        })
        .otherwise(e -> {
          LOG.warn("reconcile pass failed: {}; the next one in {} tries again", e.getMessage(), config.reconcile().interval());
          return null;
        })
        .onComplete(ar -> {
          running = false;
          passes.incrementAndGet();
        });
  }

  /**
   * What the smarthost did is only asked while this node's retry part says what it holds: a held outcome, or a row
   * still in delivery, is being settled, never reconciled. No answer, no pass (a wrong resolution is worse than a late one).
   */
  private Future<Set<UUID>> held() {
    return bus.request(RetryMessages.HELD, new RetryMessages.HeldQuery(), RetryMessages.HeldOutcomes.class, HELD_TIMEOUT)
        .map(RetryMessages.HeldOutcomes::all); // and the rows this node is still delivering
  }

  private Future<Void> reconcile(List<Candidate> due) {
    Map<UUID, List<Sighting>> seen = new HashMap<>();
    Future<Void> asked = Future.succeededFuture();
    for (EvidenceSource source : sources) {
      asked = asked.compose(v -> source.find(due, config.reconcile().window())
          .map(found -> {
            found.forEach((id, list) -> seen.computeIfAbsent(id, k -> new ArrayList<>()).addAll(list));
            return (Void) null;
          })
          .otherwise(e -> {
            sourceFailed(source, e);
            return null;
          }));
    }
    return asked.compose(v -> {
      Future<Void> rows = Future.succeededFuture();
      for (Candidate c : due) {
        // Leadership is asked again per row: a node fenced mid-pass stops at once.
        rows = rows.compose(x -> node.leadership().leads(Job.RECONCILE) && !schedule.stopped()
            ? one(c, seen.getOrDefault(c.id(), List.of())) : Future.succeededFuture());
      }
      return rows;
    });
  }

  private Future<Void> one(Candidate c, List<Sighting> sightings) {
    Duration window = config.reconcile().window();
    return finding(c, sightings, window).compose(found -> {
      if (found.isEmpty()) {
        later(c.id());
        return Future.succeededFuture();
      }
      backoff.found(c.id());
      return propose(c, found.get());
    }).otherwise(e -> {
      LOG.warn("reconciling {} failed: {}", c.id(), e.getMessage());
      return null;
    });
  }

  /**
   * The matching, always without the evidence other rows hold (their recorded replies, their proposals): a single
   * sighting is no proof that it is this row's when another copy of the message has it (docs/design.md §8.4). The
   * ledger is asked only when something fits at all; if it cannot answer, nothing is proposed this time.
   */
  private Future<Optional<Matching.Finding>> finding(Candidate c, List<Sighting> sightings, Duration window) {
    if (Matching.find(c, sightings, window, Set.of()).isEmpty()) {
      return Future.succeededFuture(Optional.empty());
    }
    Set<ReconcileMessages.EvidenceRef> evidence = new java.util.HashSet<>();
    sightings.forEach(s -> evidence.add(new ReconcileMessages.EvidenceRef(s.source(), s.ref())));
    OffsetDateTime received = c.receivedAt();
    return bus.request(ReconcileMessages.CLAIMED, new ClaimedQuery(c.id(), c.messageIdHeader(), c.mailFrom(),
            received.minus(window), received.plus(window), evidence), Claimed.class)
        .map(claimed -> {
          Set<String> refs = new java.util.HashSet<>(Matching.queuedAs(claimed.replies()));
          refs.addAll(claimed.proposedRefs());
          return Matching.find(c, sightings, window, refs);
        });
  }

  private Future<Void> propose(Candidate c, Matching.Finding f) {
    Sighting s = f.chosen().sighting();
    ResolutionOutcome outcome = s.verdict() == Sighting.Verdict.ACCEPTED ? ResolutionOutcome.DELIVERED : ResolutionOutcome.NOT_DELIVERED;
    JsonObject evidence = s.json()
        .put("matched", new JsonArray(f.chosen().matched()))
        .put("row", new JsonObject()
            .put("status", c.status().name())
            .put("version", c.version())
            .put("messageId", c.messageIdHeader())
            .put("mailFrom", c.mailFrom())
            .put("recipients", new JsonArray(c.recipients()))
            .put("receivedAt", c.receivedAt().toString())
            .put("sentSha256", c.sentSha256()));
    if (f.ambiguous()) {
      JsonArray others = new JsonArray();
      f.alternatives().forEach(a -> others.add(new JsonObject().put("source", a.sighting().source()).put("ref", a.sighting().ref())
          .put("verdict", a.sighting().verdict().name()).put("at", String.valueOf(a.sighting().at()))
          .put("summary", a.sighting().summary())));
      evidence.put("alternatives", others);
    }
    Propose p = new Propose(c.id(), c.version(), outcome, f.confidence(), s.source(), s.ref(), evidence, node.nodeId());
    return bus.request(ReconcileMessages.PROPOSE, p, Proposed.class).compose(proposed -> {
      ProposalView v = proposed.proposal();
      if (v == null) {
        later(c.id()); // written by nobody: the row moved, has an open proposal, or the evidence is another row's
        return Future.succeededFuture();
      }
      node.metrics().reconcileProposal(v.confidence() == Confidence.EXACT ? GatewayMetrics.ProposalConfidence.EXACT
          : GatewayMetrics.ProposalConfidence.WEAK, outcome == ResolutionOutcome.DELIVERED
          ? GatewayMetrics.ProposalOutcome.DELIVERED : GatewayMetrics.ProposalOutcome.NOT_DELIVERED);
      LOG.info("reconcile: proposal {} for {} ({}): {} ({}) from {}: {}", v.id(), c.id(), c.status(), outcome, v.confidence().label(),
          v.source(), s.summary());
      if (config.reconcile().autoResolve() == GatewayConfig.AutoResolve.EXACT && v.confidence() == Confidence.EXACT
          && node.leadership().leads(Job.RECONCILE)) {
        return bus.request(ReconcileMessages.ACCEPT, new Accept(v.id(), "reconcile:" + v.source(), null), Accepted.class)
            .<Void>map(a -> null)
            .otherwise(e -> {
              LOG.warn("reconcile: proposal {} for {} not resolved automatically: {}", v.id(), c.id(), e.getMessage());
              return null;
            });
      }
      return Future.succeededFuture();
    });
  }

  /** No evidence (yet): look again after a pause that doubles, from one interval up to an hour. */
  private void later(UUID id) {
    backoff.later(id, node.clock().instant());
  }

  private void sourceFailed(EvidenceSource source, Throwable e) {
    long now = System.currentTimeMillis();
    Long last = failureLogged.get(source.name());
    if (last == null || now - last > 60_000) {
      failureLogged.put(source.name(), now);
      LOG.warn("reconcile source {} gave no evidence this pass: {}", source.name(), e.toString());
    }
  }

  private OffsetDateTime pendingBefore() {
    return OffsetDateTime.ofInstant(node.clock().instant(), ZoneOffset.UTC).minus(config.reconcile().pendingAge());
  }
}
