package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.reconcile.PostfixLog;
import dev.ledgerpost.operate.suppression.BounceFeed;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Postfix log follower (docs/design.md §8.13): every {@code tracking.pollInterval} it reads the lines added to
 * {@code tracking.postfixLog} (on a worker: {@link LogFollower}), parses them with the reconcile part's grammar
 * ({@link PostfixLog}), and records the delivery lines of queue ids that are our rows' as facts, with the position
 * after them, in one transaction ({@link TrackingStore}). Lines of queue ids we never relayed are ignored. A pass never
 * overlaps another; a pass that failed reads its lines again from the last saved position (the facts' unique key makes
 * that harmless). Every node with the setting follows its own file. Without it the verticle only serves the facts
 * recorded ({@link TrackingMessages#OF_MESSAGE}) and their retention.
 */
final class TrackingVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(TrackingVerticle.class);
  /**
   * How long a delivery line whose row is not found is tried again: the smarthost may log the delivery before our settle
   * of its 250 has committed the reply that names the queue id. After that it is not ours.
   */
  static final Duration UNMATCHED_GRACE = Duration.ofSeconds(60);
  private static final int MAX_UNMATCHED = 10_000;
  static final Duration RETRY_INTERVAL = Duration.ofSeconds(2);
  /** Queue ids whose first line was seen, and when: a delivery days later still finds its row by that time. */
  private static final int MAX_FIRST_SEEN = 100_000;
  private static final Duration PRUNE_INTERVAL = Duration.ofHours(1);
  private static final int PRUNE_BATCH = 10_000;
  private static final int PRUNE_BATCHES = 1_000;
  /** The age of the oldest row without news is read every this many polls. */
  static final int NEWS_EVERY = 10;
  /** With no fact yet, rows are looked at back to this long ago: the gauge is at most this. */
  static final Duration NEWS_HORIZON = Duration.ofHours(1);

  private final Path path;
  private final Duration interval;
  private final Duration retention;
  private final Database db;
  private final Classifier classifier;
  private final String node;
  private final Clock clock;
  private final ZoneId zone = ZoneId.systemDefault();
  private final Map<String, Instant> firstSeen = new LinkedHashMap<>(1024, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Instant> eldest) {
      return size() > MAX_FIRST_SEEN;
    }
  };
  /** Delivery lines not matched yet, with the time they were first tried. */
  private List<Map.Entry<Fact, Instant>> unmatched = new ArrayList<>();
  private TrackingStore store;
  private LogFollower follower;
  private LogFollower.Position saved;
  private boolean busy;
  /** The last loss the follower reported (a file of the last run not found), logged once. */
  private String lastLost;
  /** Whether the last pass failed: the log says so once per outage, and once when it is over. */
  private boolean failing;
  private long timer = -1;
  private long pruneTimer = -1;
  private long newsTimer = -1;
  /** When the oldest relayed row without news was received (null: none), as last read; the gauge reads it. */
  private volatile Instant oldestWithoutNews;
  private boolean readingNews;
  private Instant lastRetry;
  private boolean pruning;

  private final BounceFeed bounces;
  /** tracking.relayDsns: whether a matched DSN is relayed on to the sender as well. */
  private final boolean relayDsns;
  /** At most this many relayed DSNs' identities are remembered here (the table answers for the others). */
  private static final int MAX_RELAYED = 10_000;
  /**
   * The identities (hex) of the DSNs this node relayed, and the first one's ledger id: the loop guard's answer before
   * their {@code tracking_dsns} rows commit (a DSN routed straight back can arrive again within milliseconds).
   */
  private final Map<String, UUID> relayed = new LinkedHashMap<>(256, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, UUID> eldest) {
      return size() > MAX_RELAYED;
    }
  };

  /**
   * How long a DSN let through stays "under way" at most when nothing is heard of it: longer than any relay's own
   * timeouts, so an entry the intake never closed (a node's crash between verdict and outcome) is forgotten.
   */
  static final Duration UNDER_WAY = Duration.ofMinutes(10);
  /**
   * The identities (hex) of the DSNs this node's verdict let through and whose outcome is not known yet, and since when.
   * A loop can bring a DSN back before its first relay has even settled (the smarthost routes it straight back while our
   * settle is still being written): such an arrival is the loop's, not a new DSN. An unknown outcome stays under way
   * until {@link #UNDER_WAY}: the smarthost may have the DSN, and relaying it twice is what the guard is for.
   */
  private final Map<String, Instant> underWay = new HashMap<>();

  TrackingVerticle(Path path, Duration interval, Duration retention, Database db, Classifier classifier, String node, Clock clock,
      BounceFeed bounces, boolean relayDsns) {
    this.bounces = bounces;
    this.relayDsns = relayDsns;
    this.path = path;
    this.interval = interval;
    this.retention = retention;
    this.db = db;
    this.classifier = classifier;
    this.node = node;
    this.clock = clock;
  }

  @Override
  public Future<?> start() {
    store = new TrackingStore(db, bounces);
    Bus.of(vertx).serve(TrackingMessages.OF_MESSAGE, TrackingMessages.OfMessage.class, q -> store.ofMessage(q.messageId()));
    Bus.of(vertx).serve(TrackingMessages.DSN, TrackingMessages.Returned.class, this::returned);
    Bus.of(vertx).serve(TrackingMessages.DSN_VERDICT, TrackingMessages.Ask.class, this::verdict);
    Bus.of(vertx).serve(TrackingMessages.DSN_UNRELAYED, TrackingMessages.Unrelayed.class, q -> {
      underWay.remove(HexFormat.of().formatHex(q.key()));
      return Future.succeededFuture(true);
    });
    pruneTimer = vertx.setPeriodic(PRUNE_INTERVAL.toMillis(), t -> prune());
    if (path == null) {
      return Future.succeededFuture(); // no log to follow: the facts recorded before are still served and retained
    }
    return store.position(node, path.toString()).onSuccess(p -> {
      saved = p;
      follower = new LogFollower(path, p);
      timer = vertx.setPeriodic(interval.toMillis(), t -> pass());
      newsTimer = vertx.setPeriodic(interval.multipliedBy(NEWS_EVERY).toMillis(), t -> readNews());
    });
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    vertx.cancelTimer(pruneTimer);
    vertx.cancelTimer(newsTimer);
    LogFollower f = follower;
    if (f == null) {
      return Future.succeededFuture();
    }
    return vertx.executeBlocking(() -> {
      f.close();
      return null;
    });
  }

  /** Whether this node follows a log. */
  boolean follows() {
    return path != null;
  }

  /** One read and its facts; never overlaps itself. Answers once the batch is recorded (or failed). */
  Future<Void> pass() {
    if (busy) {
      return Future.succeededFuture();
    }
    busy = true;
    LogFollower f = follower;
    return vertx.executeBlocking(f::poll).compose(chunk -> {
      if (chunk.lost() != null && !chunk.lost().equals(lastLost)) {
        // Once, though a failed pass makes a new follower from the same saved position, which finds the same loss.
        lastLost = chunk.lost();
        LOG.warn(chunk.lost());
      }
      return record(chunk);
    }).map(v -> {
      if (failing) {
        failing = false;
        LOG.info("tracking: {} is followed again", path);
      }
      return v;
    }).otherwise(e -> {
      if (!failing) {
        failing = true;
        LOG.warn("tracking: {} not followed ({}); tried again every {}, from the last saved position", path, e.getMessage(),
            interval);
      } else {
        LOG.debug("tracking: {} still not followed: {}", path, e.getMessage());
      }
      LogFollower.Position from = saved;
      vertx.executeBlocking(() -> {
        f.close();
        return null;
      });
      follower = new LogFollower(path, from);
      return null;
    }).onComplete(ar -> busy = false);
  }

  private Future<Void> record(LogFollower.Chunk chunk) {
    ZonedDateTime reference = ZonedDateTime.now(clock.withZone(zone));
    Map<String, Instant> seen = new LinkedHashMap<>();
    List<Fact> facts = new ArrayList<>();
    for (String raw : chunk.lines()) {
      PostfixLog.Line l = PostfixLog.parse(raw, zone, reference);
      if (l == null || l.queueId() == null) {
        continue;
      }
      if (!firstSeen.containsKey(l.queueId())) {
        seen.putIfAbsent(l.queueId(), l.at());
      }
      PostfixLog.Delivery d = PostfixLog.delivery(l);
      Fact fact = d == null ? null : Fact.of(l, d, classifier);
      if (fact != null) {
        facts.add(fact);
      }
    }
    List<TrackingStore.Sighting> sightings = new ArrayList<>();
    seen.forEach((q, at) -> sightings.add(new TrackingStore.Sighting(q, at)));
    Instant now = clock.instant();
    // The lines not matched yet are tried again every RETRY_INTERVAL, not every poll: each try is a scan of minutes of rows.
    boolean retry = lastRetry == null || Duration.between(lastRetry, now).compareTo(RETRY_INTERVAL) >= 0;
    List<Map.Entry<Fact, Instant>> retried = retry ? unmatched : List.of();
    List<Map.Entry<Fact, Instant>> carried = retry ? List.of() : unmatched;
    List<Fact> all = new ArrayList<>(facts);
    retried.forEach(e -> all.add(e.getKey()));
    if (all.isEmpty() && sightings.isEmpty() && (chunk.position() == null || chunk.position().equals(saved))) {
      return Future.succeededFuture();
    }
    // Nothing of this pass is kept before its transaction commits: a failed one is read again as it was.
    return store.record(node, path.toString(), sightings, all, chunk.position()).map(r -> {
      saved = chunk.position() == null ? saved : chunk.position();
      firstSeen.putAll(seen);
      if (retry) {
        lastRetry = now;
      }
      Map<Fact, Instant> triedAt = new LinkedHashMap<>();
      retried.forEach(e -> triedAt.put(e.getKey(), e.getValue()));
      List<Map.Entry<Fact, Instant>> still = new ArrayList<>(carried);
      for (Fact f : r.unmatched()) {
        Instant first = triedAt.getOrDefault(f, now);
        if (Duration.between(first, now).compareTo(UNMATCHED_GRACE) < 0 && still.size() < MAX_UNMATCHED) {
          still.add(Map.entry(f, first));
        }
      }
      unmatched = still;
      for (String[] fact : r.facts()) {
        db.metrics().trackingFact(fact[0], fact[1]);
      }
      BounceFeed.audit(r.suppressed());
      if (!r.facts().isEmpty()) {
        db.outboxWritten(); // their events: publish them now rather than at the next poll
      }
      return null;
    });
  }

  /**
   * A message relayed with the empty envelope sender (docs/design.md §8.13, "Returned DSNs"): read on a worker
   * ({@link DsnReport}, bounded), then matched and recorded ({@link TrackingStore#dsn}). A message that does not say it is
   * a delivery-status report is not a DSN and leaves nothing; every other one leaves its row in {@code tracking_dsns},
   * one count of {@code ledgerpost_tracking_dsn_total{result}} and a log line. Nothing here can fail the intake: it
   * answered its client before.
   */
  private Future<TrackingMessages.DsnResult> returned(TrackingMessages.Returned q) {
    Instant received = clock.instant();
    if (q.verdict() != null && q.verdict().key() != null && q.verdict().action() == TrackingMessages.Action.RELAY) {
      underWay.remove(HexFormat.of().formatHex(q.verdict().key())); // its own relay's outcome is known (a loop's arrival is not)
    }
    if (q.relayed() && q.verdict() != null && q.verdict().key() != null) {
      relayed.putIfAbsent(HexFormat.of().formatHex(q.verdict().key()), q.messageId()); // at once: the loop may be quick
    }
    return vertx.executeBlocking(() -> DsnReport.parse(q.dotStuffed() ? DsnReport.unstuffed(q.bytes()) : q.bytes()))
        .compose(parsed -> {
          if (parsed instanceof DsnReport.Unparseable u && u.notAReport()) {
            return Future.succeededFuture(new TrackingMessages.DsnResult("ignored", u.reason(), 0));
          }
          List<String[]> recorded = new ArrayList<>();
          List<SuppressionMessages.Entry> suppressed = new ArrayList<>();
          if (q.relayed() && parsed instanceof DsnReport.Report r) { // not asked before the wire (no verdict): remembered now
            relayed.putIfAbsent(HexFormat.of().formatHex(DsnReport.identity(r)), q.messageId());
          }
          return store.dsn(q.messageId(), parsed, received, LedgerIds.lowest(received.minus(retention)), classifier, q.relayed(),
                  q.verdict(), recorded, suppressed)
              .map(result -> {
                for (String[] fact : recorded) {
                  db.metrics().trackingFact(fact[0], fact[1]);
                }
                BounceFeed.audit(suppressed);
                if (!recorded.isEmpty()) {
                  db.outboxWritten();
                }
                db.metrics().trackingDsn(result.result());
                if (result.result().equals("matched")) {
                  LOG.info("tracking: DSN {} matched {}: {} fact(s){}", q.messageId(), result.reason(), result.facts(),
                      q.relayed() ? "" : ", kept (not relayed)");
                } else {
                  LOG.info("tracking: DSN {} {}: {}", q.messageId(), result.result(), result.reason());
                }
                return result;
              });
        })
        .onFailure(e -> LOG.warn("tracking: DSN {} not recorded: {}", q.messageId(), e.getMessage()));
  }

  /**
   * The SMTP intake's question before it relays a message with the empty sender that says it is a delivery-status report
   * (docs/design.md §8.13, "Returned DSNs"): read on a worker ({@link DsnReport}), then {@link TrackingStore#verdict}.
   * Unreadable: relayed (as an unmatched or malformed DSN always is). Bounded by the intake's own timeout, which relays.
   */
  private Future<TrackingMessages.Verdict> verdict(TrackingMessages.Ask q) {
    Instant received = clock.instant();
    return vertx.executeBlocking(() -> DsnReport.parse(q.dotStuffed() ? DsnReport.unstuffed(q.bytes()) : q.bytes()))
        .compose(parsed -> {
          if (!(parsed instanceof DsnReport.Report r)) {
            return Future.succeededFuture(TrackingMessages.Verdict.RELAY);
          }
          String hex = HexFormat.of().formatHex(DsnReport.identity(r));
          underWay.values().removeIf(since -> since.isBefore(received.minus(UNDER_WAY)));
          if (underWay.containsKey(hex)) {
            return Future.succeededFuture(new TrackingMessages.Verdict(TrackingMessages.Action.LOOPED, DsnReport.identity(r), null,
                "the same report arrived again while its relay was under way"));
          }
          UUID first = relayed.get(hex);
          underWay.put(hex, received); // before the store is asked: a second arrival meanwhile is this one's loop
          return store.verdict(r, received, LedgerIds.lowest(received.minus(retention)), classifier, relayDsns, first)
              .andThen(v -> {
                if (v.failed() || v.result().keeps()) {
                  underWay.remove(hex); // kept (or no verdict: the intake relays, and its outcome is never reported)
                }
              });
        })
        .onSuccess(v -> {
          if (v.keeps()) {
            LOG.info("tracking: a returned DSN is kept, not relayed: {}", v.reason());
          }
        });
  }

  /**
   * The age in seconds of the oldest relayed row (SENT) without any fact, 0 when there is none: a smarthost whose log
   * stopped being readable, or stopped saying anything of ours, shows as a growing age.
   */
  double oldestWithoutNewsSeconds() {
    Instant t = oldestWithoutNews;
    return t == null ? 0 : Math.max(0, Duration.between(t, clock.instant()).toMillis() / 1000.0);
  }

  private void readNews() {
    if (readingNews) {
      return;
    }
    readingNews = true;
    store.oldestWithoutNews(clock.instant().minus(NEWS_HORIZON)).onSuccess(t -> oldestWithoutNews = t)
        .onFailure(e -> LOG.debug("tracking: the oldest row without news not read: {}", e.getMessage()))
        .onComplete(ar -> readingNews = false);
  }

  /**
   * Retention (docs/data-model.md §5.24): facts of rows past ledger.retention, in bounded batches, one after another
   * while a batch comes back full (an hour of a busy ledger's facts is millions), at most {@link #PRUNE_BATCHES} a pass.
   */
  private void prune() {
    if (pruning) {
      return;
    }
    pruning = true;
    store.pruneAll(LedgerIds.lowest(clock.instant().minus(retention)), PRUNE_BATCH, PRUNE_BATCHES)
        .onFailure(e -> LOG.warn("tracking: facts past ledger.retention not deleted this time: {}", e.getMessage()))
        .onComplete(ar -> pruning = false);
  }


}
