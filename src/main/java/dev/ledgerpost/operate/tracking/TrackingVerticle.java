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
 * ({@link PostfixLog}), and, {@link #HOLD} after reading them, records the delivery lines of queue ids that are our
 * rows' as facts, with the position after them, in one transaction ({@link TrackingStore}). A queue id's lines belong
 * to its life, from its client= line to its "removed": Postfix reuses a short queue id as soon as its message is
 * removed. Lines of queue ids we never relayed are ignored. A pass never
 * overlaps another; a pass that failed reads its lines again from the last saved position (the facts' unique key makes
 * that harmless). Every node with the setting follows its own file. Without it the verticle only serves the facts
 * recorded ({@link TrackingMessages#OF_MESSAGE}) and their retention.
 */
final class TrackingVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(TrackingVerticle.class);
  /**
   * How long a line waits after it was read before it is recorded: Postfix logs a message's lines (its client= line at
   * our first RCPT, its delivery a moment after its 250) before our settle of that 250 has committed the reply that
   * names the queue id. Held this long, a batch's lookups find their rows the first time, a message's lines mostly
   * fall in one batch (so its mapping need not be recorded), and the position saved is after the last line recorded,
   * so a restart reads the held lines again (docs/design.md §8.13).
   */
  static final Duration HOLD = Duration.ofSeconds(2);
  /**
   * How long a delivery line whose row is not found is tried again (a settle slower than {@link #HOLD}, a client that
   * waited long before its DATA): every {@link #RETRY_INTERVAL} in the tight window, and from {@link #WIDE_AFTER} on in
   * the wide one at most every {@link #WIDE_INTERVAL}, so that lines of queue ids that are not ours (a Postfix other
   * senders use too) cost a wide scan a few times, not every poll. After that it is not ours.
   */
  static final Duration UNMATCHED_GRACE = Duration.ofSeconds(60);
  private static final int MAX_UNMATCHED = 10_000;
  static final Duration RETRY_INTERVAL = Duration.ofSeconds(2);
  static final Duration WIDE_AFTER = Duration.ofSeconds(10);
  static final Duration WIDE_INTERVAL = Duration.ofSeconds(10);
  /** Queue ids whose client= line was read and not their "removed" yet, and when: a line days later knows its life. */
  private static final int MAX_LIVES = 100_000;
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
  /** The open lives: a queue id and the time of its client= line (docs/design.md §8.13, "Queue ids are reused"). */
  private final Map<String, Instant> lives = new LinkedHashMap<>(1024, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Instant> eldest) {
      return size() > MAX_LIVES;
    }
  };
  /**
   * A line read and not recorded yet, and when it was read; {@code after}: on the last line of a poll's chunk, the
   * position after the chunk (null on the others). A chunk's lines are read at once, so they are let go together, and a
   * saved position is always a chunk's: the follower names a position by the bytes before it too, known for its end.
   */
  private record Held(String raw, LogFollower.Position after, Instant readAt) {}
  private final java.util.ArrayDeque<Held> held = new java.util.ArrayDeque<>();
  /** A delivery line not matched yet, with the time it was first tried. */
  private record Waiting(TrackingStore.Delivery delivery, Instant firstTried) {}
  private List<Waiting> unmatched = new ArrayList<>();
  private Instant lastWide;
  /** Whether lines were dropped at the cap of unmatched ones: said once until the list is below it again. */
  private boolean capped;
  private TrackingStore store;
  private DsnStore dsns;
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
    dsns = new DsnStore(db, store);
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
      held.clear(); // read again from the saved position, which is before them
      vertx.executeBlocking(() -> {
        f.close();
        return null;
      });
      follower = new LogFollower(path, from);
      return null;
    }).onComplete(ar -> busy = false);
  }

  /** A queue id's life as this batch sees it: the time of its client= line (null: not read by this run). */
  private static final class Life {
    final String queueId;
    final Instant since;
    final boolean fresh;
    boolean removed;

    Life(String queueId, Instant since, boolean fresh) {
      this.queueId = queueId;
      this.since = since;
      this.fresh = fresh;
    }
  }

  private Future<Void> record(LogFollower.Chunk chunk) {
    Instant now = clock.instant();
    int n = chunk.lines().size();
    for (int i = 0; i < n; i++) {
      held.add(new Held(chunk.lines().get(i), i == n - 1 ? chunk.position() : null, now));
    }
    // The lines held long enough; the position after the last of them, or the chunk's when none is held any more.
    List<String> lines = new ArrayList<>();
    LogFollower.Position upTo = null;
    while (!held.isEmpty() && !held.peekFirst().readAt().isAfter(now.minus(HOLD))) {
      Held h = held.pollFirst();
      lines.add(h.raw());
      upTo = h.after() != null ? h.after() : upTo;
    }
    if (held.isEmpty() && chunk.position() != null) {
      upTo = chunk.position();
    }
    ZonedDateTime reference = ZonedDateTime.now(clock.withZone(zone));
    Map<String, Life> current = new java.util.HashMap<>();
    List<Life> begun = new ArrayList<>();
    List<Life> over = new ArrayList<>();
    List<TrackingStore.Ended> ended = new ArrayList<>();
    List<Map.Entry<Fact, Life>> read = new ArrayList<>();
    for (String raw : lines) {
      PostfixLog.Line l = PostfixLog.parse(raw, zone, reference);
      if (l == null || l.queueId() == null) {
        continue;
      }
      String q = l.queueId();
      if (l.program().equals("smtpd") && l.text().startsWith("client=")) {
        Life life = new Life(q, l.at(), true); // a new life: a short queue id is reused once its message is removed
        current.put(q, life);
        begun.add(life);
        continue;
      }
      Life life = current.computeIfAbsent(q, k -> new Life(k, lives.get(k), false));
      if (l.text().equals("removed")) {
        life.removed = true;
        over.add(life);
        current.remove(q);
        if (!life.fresh) {
          ended.add(new TrackingStore.Ended(q, l.at())); // its mapping, if an earlier batch recorded one
        }
        continue;
      }
      PostfixLog.Delivery d = PostfixLog.delivery(l);
      Fact fact = d == null ? null : Fact.of(l, d, classifier);
      if (fact != null) {
        read.add(Map.entry(fact, life));
      }
    }
    List<TrackingStore.Sighting> sightings = new ArrayList<>();
    for (Life life : begun) {
      if (!life.removed) {
        sightings.add(new TrackingStore.Sighting(life.queueId, life.since));
      }
    }
    List<TrackingStore.Delivery> all = new ArrayList<>();
    read.forEach(e -> all.add(new TrackingStore.Delivery(e.getKey(), e.getValue().since, e.getValue().fresh, !e.getValue().removed, false)));
    // The lines not matched yet are tried again every RETRY_INTERVAL, not every poll; the wide window at most every
    // WIDE_INTERVAL, for the lines unmatched for WIDE_AFTER.
    boolean retry = lastRetry == null || Duration.between(lastRetry, now).compareTo(RETRY_INTERVAL) >= 0;
    boolean wideDue = lastWide == null || Duration.between(lastWide, now).compareTo(WIDE_INTERVAL) >= 0;
    List<Waiting> retried = retry ? unmatched : List.of();
    List<Waiting> carried = retry ? List.of() : unmatched;
    Map<Fact, Instant> triedAt = new java.util.IdentityHashMap<>();
    boolean wide = false;
    for (Waiting w : retried) {
      boolean widened = wideDue && Duration.between(w.firstTried(), now).compareTo(WIDE_AFTER) >= 0;
      wide |= widened;
      TrackingStore.Delivery d = w.delivery();
      // Its life ended meanwhile ("removed" read): a mapping found now would only outlive it.
      boolean open = d.since() == null || d.since().equals(lives.get(d.fact().queueId()));
      all.add(d.again(open, widened));
      triedAt.put(w.delivery().fact(), w.firstTried());
    }
    LogFollower.Position at = upTo;
    if (all.isEmpty() && sightings.isEmpty() && ended.isEmpty() && (at == null || at.equals(saved))) {
      return Future.succeededFuture();
    }
    boolean widePass = wide;
    // Nothing of this pass is kept before its transaction commits: a failed one is read again as it was.
    return store.record(node, path.toString(), sightings, all, ended, at).map(r -> {
      saved = at == null ? saved : at;
      over.forEach(life -> lives.remove(life.queueId));
      begun.forEach(life -> {
        if (!life.removed) {
          lives.put(life.queueId, life.since);
        }
      });
      if (retry) {
        lastRetry = now;
      }
      if (widePass) {
        lastWide = now;
      }
      List<Waiting> still = new ArrayList<>(carried);
      int dropped = 0;
      for (TrackingStore.Delivery d : r.unmatched()) {
        Instant first = triedAt.getOrDefault(d.fact(), now);
        if (Duration.between(first, now).compareTo(UNMATCHED_GRACE) >= 0) {
          continue; // not ours
        }
        if (still.size() < MAX_UNMATCHED) {
          still.add(new Waiting(d, first));
        } else {
          dropped++;
        }
      }
      if (dropped > 0 && !capped) {
        LOG.warn("tracking: {} delivery line(s) of {} not tried again: {} lines without their row already wait (the cap); "
            + "is the smarthost's log another Postfix's, or the ledger's settles minutes late?", dropped, path, MAX_UNMATCHED);
      }
      capped = dropped > 0;
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
   * ({@link DsnReport}, bounded), then matched and recorded ({@link DsnStore#dsn}). A message that does not say it is
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
          return dsns.dsn(q.messageId(), parsed, received, LedgerIds.lowest(received.minus(retention)), classifier, q.relayed(),
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
   * (docs/design.md §8.13, "Returned DSNs"): read on a worker ({@link DsnReport}), then {@link DsnStore#verdict}.
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
          return dsns.verdict(r, received, LedgerIds.lowest(received.minus(retention)), classifier, relayDsns, first)
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
