package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.suppression.BounceFeed;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.platform.db.TransactionPolicy;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Tracking's SQL (docs/design.md §8.13, docs/data-model.md §5.24), on the follower's context over the shared handle. One
 * batch is one transaction: the queue ids it has not mapped yet are mapped to our rows, its delivery lines become facts
 * of the recipients they name (a line read twice adds nothing: the unique key), and the follower's position is saved
 * with them, so a restart neither loses a fact nor records one twice. Every source writes its facts through
 * {@link #write}; a returned DSN's matching is {@link DsnStore}'s, the downstream follower's rows {@link DownstreamStore}'s.
 */
final class TrackingStore {
  /**
   * Postfix keeps a message at most 5 days (maximal_queue_lifetime): a mapping older than this before a batch's first
   * line is not used (its queue id's "removed" line was not read: a log lost or cut).
   */
  static final java.time.Duration QUEUE_LIFETIME = java.time.Duration.ofDays(6);
  private static final String MAPPED =
      "SELECT queue_id, message_id, seen_at FROM tracking_queue_ids WHERE queue_id = ANY($1) AND seen_at > $2";
  /**
   * Where a queue id's row is looked for first: the rows whose ids were issued within this of the line the lookup is
   * anchored on. The anchor is the queue id's {@code client=} line when this run read it (Postfix opens the queue file
   * at our first RCPT; the id is issued at the client's DATA, a moment later), else the delivery line itself (the id
   * is older by the body's transfer and Postfix's delivery, seconds). The log's time stamps are whole seconds in
   * Postfix's own {@code maillog_file}. A batch of a second's lines then reads about 11 seconds of rows, not 4 minutes
   * (docs/design.md §8.13, "What a batch costs").
   */
  static final java.time.Duration TIGHT = java.time.Duration.ofSeconds(5);
  /**
   * The wide window, for a delivery line still without its row after {@link TrackingVerticle#WIDE_AFTER}: a client that
   * waited long between its first RCPT and its DATA, a body that took minutes, a line whose queue id was first read
   * after a restart and whose message Postfix kept a while, clocks that differ. From 3 minutes before the anchor to a
   * minute after it.
   */
  static final java.time.Duration BEFORE = java.time.Duration.ofMinutes(3);
  static final java.time.Duration AFTER = java.time.Duration.ofMinutes(1);
  /**
   * The rows of the queue ids looked for, in one statement: a range scan of the primary key over the merged windows
   * (each row read once however many anchors its window serves), each row's queue id cut out of its reply by position
   * (strpos, then the letters and digits that start what follows: the reply is not searched by a regular expression),
   * joined to the lookups; per lookup the row nearest its anchor on the expected side (a short
   * queue id is reused by Postfix as soon as its message is removed: the inode and the microsecond). The mappings a
   * later batch may need (lives still open at the batch's end) are recorded in the same statement; a life whose lines
   * all fell in this batch writes none.
   */
  private static final String LOOKUP = """
      WITH q AS (
        SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bool[], $4::uuid[], $5::uuid[], $6::bool[])
                   AS q(queue_id, seen_at, after, lo, hi, keep)),
      m AS (
        SELECT m.id, substring(substr(m.downstream_reply, strpos(m.downstream_reply, 'queued as ') + 10) FROM '^[0-9A-Za-z]+')
                     AS queue_id
          FROM unnest($7::uuid[], $8::uuid[]) AS r(lo, hi)
          JOIN LATERAL (SELECT id, downstream_reply FROM messages
                         WHERE id >= r.lo AND id < r.hi AND strpos(downstream_reply, 'queued as ') > 0) m ON true),
      found AS (
        SELECT DISTINCT ON (q.queue_id, q.seen_at) q.queue_id, m.id AS message_id, q.seen_at, q.keep
          FROM q JOIN m ON m.queue_id = q.queue_id AND m.id >= q.lo AND m.id < q.hi
         ORDER BY q.queue_id, q.seen_at,
                  CASE WHEN q.after THEN ('x' || translate(left(m.id::text, 13), '-', ''))::bit(48)::bigint
                                         < (extract(epoch FROM q.seen_at) * 1000)::bigint
                       ELSE ('x' || translate(left(m.id::text, 13), '-', ''))::bit(48)::bigint
                                         > (extract(epoch FROM q.seen_at) * 1000)::bigint + 1000 END,
                  abs(('x' || translate(left(m.id::text, 13), '-', ''))::bit(48)::bigint
                      - (extract(epoch FROM q.seen_at) * 1000)::bigint)),
      kept AS (
        INSERT INTO tracking_queue_ids (queue_id, message_id, seen_at)
        SELECT queue_id, message_id, seen_at FROM found WHERE keep
        ON CONFLICT DO NOTHING)
      SELECT queue_id, message_id, seen_at FROM found""";
  /**
   * A queue id's life is over ("removed"): its mapping is deleted, so that the mappings are the open lives only and a
   * reused queue id can never reach an earlier message's row; a newer life's mapping (seen after the line) stays.
   */
  private static final String ENDED = """
      DELETE FROM tracking_queue_ids t USING unnest($1::text[], $2::timestamptz[]) AS e(queue_id, at)
       WHERE t.queue_id = e.queue_id AND t.seen_at <= e.at""";
  static final String RECIPIENTS = "SELECT message_id, idx, address FROM recipients WHERE message_id = ANY($1)";
  /**
   * Taken by every transaction that inserts facts, before it does: the usage statistics' barrier (V114's
   * stats_delivery_barrier, docs/data-model.md §5.29) takes it exclusively to learn an id below which every fact has
   * committed. Shared: writers never wait for one another, only, for a moment, for a barrier.
   */
  /** The events one outbox row holds at most (the check of V40 and V115; the readers' bound on a row's span). */
  static final int EVENTS_PER_ROW = 64;
  private static final String FACTS_LOCK = "SELECT pg_advisory_xact_lock_shared(19539, 2)";
  /**
   * The facts and, in the same statement, their events (docs/design.md §6.1: an event commits with the fact it reports):
   * {@code recipient.delivered}, {@code recipient.deferred}, or {@code recipient.bounced} for a bounce and an expiry
   * alike (its {@code state} tells them apart). A fact already recorded (the conflict) has no new event either. The
   * events are batched (V115, docs/data-model.md §5.30): one outbox row per 64 new facts, in fact id order, holding
   * only their messages and ids; the view {@code outbox_events} builds each event's type, id and payload from its fact
   * when it is read. A row per fact (its jsonb payload, four index entries, then the publisher's update of it) was
   * more than half of tracking's WAL (docs/design.md §8.13, "What a batch costs").
   */
  private static final String INSERT = """
      WITH f AS (
        INSERT INTO delivery_facts (message_id, idx, state, at, remote_host, dsn, reply, category, rule, source, evidence,
                                    queue_id, event_key)
        SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[],
                             $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bytea[])
        ON CONFLICT (message_id, idx, source, event_key) DO NOTHING
        RETURNING id, message_id, state, category),
      n AS (
        SELECT id, message_id, (row_number() OVER (ORDER BY id) - 1) / %d AS batch FROM f WHERE state <> 'queued'),
      e AS (
        INSERT INTO outbox (type, message_ids, fact_ids)
        SELECT 'recipient.*', array_agg(message_id ORDER BY id), array_agg(id ORDER BY id)
          FROM n GROUP BY batch ORDER BY batch)
      SELECT id, state, category FROM f""".formatted(EVENTS_PER_ROW);
  private static final String OF_MESSAGE = """
      SELECT f.idx, (SELECT count(*) FROM recipients r WHERE r.message_id = f.message_id AND r.idx < f.idx) AS position,
             f.state, f.at, f.remote_host, f.dsn, f.reply, f.category, f.rule, f.source, f.evidence, f.queue_id
        FROM delivery_facts f WHERE f.message_id = $1 ORDER BY f.id""";
  private static final String LAST_FACT = "SELECT message_id FROM delivery_facts ORDER BY id DESC LIMIT 1";
  /** The first relayed row from {@code $1} on with no fact at all: stops at it (the primary key, oldest first). */
  private static final String OLDEST_WITHOUT_NEWS = """
      SELECT m.received_at FROM messages m
       WHERE m.id >= $1 AND m.status = 'SENT'
         AND NOT EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = m.id)
       ORDER BY m.id LIMIT 1""";
  private static final String POSITION =
      "SELECT file_key, position, window_sha256 FROM tracking_log_positions WHERE node_id = $1 AND path = $2";
  private static final String SAVE = """
      INSERT INTO tracking_log_positions (node_id, path, file_key, position, window_sha256) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (node_id, path) DO UPDATE SET file_key = EXCLUDED.file_key, position = EXCLUDED.position,
        window_sha256 = EXCLUDED.window_sha256, updated_at = now()""";
  /** Retention: facts and mappings of message ids below the cut-off, a bounded batch at a time. */
  private static final String PRUNE_FACTS = """
      DELETE FROM delivery_facts WHERE id IN (SELECT id FROM delivery_facts WHERE message_id < $1 LIMIT $2)""";
  private static final String PRUNE_QUEUE_IDS = """
      DELETE FROM tracking_queue_ids WHERE (queue_id, message_id) IN
        (SELECT queue_id, message_id FROM tracking_queue_ids WHERE message_id < $1 LIMIT $2)""";
  private static final String PRUNE_DSNS = """
      DELETE FROM tracking_dsns WHERE message_id IN (SELECT message_id FROM tracking_dsns WHERE message_id < $1 LIMIT $2)""";



  /**
   * A queue id's {@code client=} line, the start of its life, whose life was still open at the end of the batch: its
   * row is looked for around {@code at} and the mapping recorded for the lines of later batches.
   */
  record Sighting(String queueId, Instant at) {}

  /**
   * A delivery line to record: {@code since} the time of its queue id's {@code client=} line when this run read it (the
   * line's life; null when not: before a restart, or a message Postfix did not take by SMTP), {@code fresh} whether that
   * client= line is in this batch (no mapping of an earlier batch can be its life's), {@code keep} whether its life may
   * have lines in a later batch (no "removed" read yet: a mapping looked up for it is recorded), {@code wide} whether its
   * row is looked for in the wide window.
   */
  record Delivery(Fact fact, Instant since, boolean fresh, boolean keep, boolean wide) {
    /** The same line tried again in a later batch; {@code open} whether its life is still open. */
    Delivery again(boolean open, boolean wide) {
      return new Delivery(fact, since, false, keep && open, wide);
    }
  }

  /** A queue id's "removed" line: the end of its life. */
  record Ended(String queueId, Instant at) {}

  /**
   * What a batch did: the facts recorded (state and category each), the delivery lines no row of ours was found for,
   * and the suppression list's entries its bounces added (docs/design.md §8.8).
   */
  record Recorded(List<String[]> facts, List<Delivery> unmatched, List<SuppressionMessages.Entry> suppressed) {}

  private final Pool pool;
  private final TransactionPolicy policy;
  private final BounceFeed bounces;

  TrackingStore(Database db, BounceFeed bounces) {
    this.pool = db.pool();
    this.policy = db.policy();
    this.bounces = bounces;
  }

  /** Every fact of one message, in the order they were recorded (the message detail shows them per recipient). */
  Future<TrackingMessages.Facts> ofMessage(UUID id) {
    return pool.preparedQuery(OF_MESSAGE).execute(Tuple.of(id)).map(rows -> {
      List<TrackingMessages.FactView> out = new ArrayList<>();
      rows.forEach(r -> out.add(new TrackingMessages.FactView(r.getInteger("idx"), r.getLong("position").intValue(), r.getString("state"),
          r.getOffsetDateTime("at").toInstant(), r.getString("remote_host"), r.getString("dsn"), r.getString("reply"),
          r.getString("category"), r.getString("rule"), r.getString("source"), r.getString("evidence"), r.getString("queue_id"))));
      return new TrackingMessages.Facts(List.copyOf(out));
    });
  }

  Future<LogFollower.Position> position(String node, String path) {
    return pool.preparedQuery(POSITION).execute(Tuple.of(node, path)).map(rows -> {
      if (rows.size() == 0) {
        return null;
      }
      Row r = rows.iterator().next();
      Buffer w = r.getBuffer("window_sha256");
      return new LogFollower.Position(r.getString("file_key"), r.getLong("position"),
          w == null ? null : java.util.HexFormat.of().formatHex(w.getBytes()));
    });
  }

  /**
   * One batch: {@code sightings} the lives begun in it and still open at its end, {@code deliveries} its delivery lines
   * (and those tried again), {@code ended} its "removed" lines, {@code at} the position after its last line (null:
   * none to save).
   */
  Future<Recorded> record(String node, String path, List<Sighting> sightings, List<Delivery> deliveries, List<Ended> ended,
      LogFollower.Position at) {
    return policy.run("tracking", () -> pool.withTransaction(c -> recordIn(c, node, path, sightings, deliveries, ended, at)));
  }

  private Future<Recorded> recordIn(SqlConnection c, String node, String path, List<Sighting> sightings, List<Delivery> deliveries,
      List<Ended> ended, LogFollower.Position at) {
    // The mappings of earlier batches, for the lines whose life did not begin in this one.
    Set<String> older = new LinkedHashSet<>();
    Instant oldest = Instant.MAX;
    for (Delivery d : deliveries) {
      if (!d.fresh()) {
        older.add(d.fact().queueId());
        oldest = d.fact().at().isBefore(oldest) ? d.fact().at() : oldest;
      }
    }
    Map<String, List<Mapping>> mapped = new HashMap<>();
    Future<Void> done = older.isEmpty() ? Future.succeededFuture()
        : c.preparedQuery(MAPPED).execute(Tuple.tuple().addValue(older.toArray(new String[0]))
            .addValue(oldest.minus(QUEUE_LIFETIME).atOffset(ZoneOffset.UTC))).map(rows -> {
              rows.forEach(r -> add(mapped, r));
              return null;
            });
    List<String[]> recorded = new ArrayList<>();
    List<Delivery> unmatched = new ArrayList<>();
    List<SuppressionMessages.Entry> suppressed = new ArrayList<>();
    done = done.compose(v -> lookup(c, sightings, deliveries, mapped))
        .compose(v -> facts(c, deliveries, mapped, recorded, unmatched, suppressed));
    if (!ended.isEmpty()) {
      done = done.compose(v -> c.preparedQuery(ENDED).execute(Tuple.tuple()
          .addValue(ended.stream().map(Ended::queueId).toArray(String[]::new))
          .addValue(ended.stream().map(e -> e.at().atOffset(ZoneOffset.UTC)).toArray(OffsetDateTime[]::new))).mapEmpty());
    }
    if (at != null) {
      done = done.compose(v -> c.preparedQuery(SAVE).execute(Tuple.of(node, path, at.fileKey(), at.offset(),
          at.window() == null ? null : Buffer.buffer(java.util.HexFormat.of().parseHex(at.window())))).mapEmpty());
    }
    return done.map(v -> new Recorded(recorded, unmatched, suppressed));
  }

  /** A lookup's key: the queue id and the anchor its row is looked for around (the mapping's {@code seen_at}). */
  private record Lookup(String queueId, Instant at) {}

  /** What a lookup asks: {@code after} the id is expected after the anchor (a client= line), else before it. */
  private static final class Ask {
    boolean after;
    boolean wide;
    boolean keep;
  }

  private record Mapping(UUID messageId, Instant seenAt) {}

  private static void add(Map<String, List<Mapping>> mapped, Row r) {
    mapped.computeIfAbsent(r.getString("queue_id"), k -> new ArrayList<>())
        .add(new Mapping(r.getUUID("message_id"), r.getOffsetDateTime("seen_at").toInstant()));
  }

  /**
   * Looks up the rows of the lives begun in this batch and of the delivery lines no mapping answers, in one statement
   * over the merged windows; adds what it found to {@code mapped}.
   */
  private static Future<Void> lookup(SqlConnection c, List<Sighting> sightings, List<Delivery> deliveries,
      Map<String, List<Mapping>> mapped) {
    Map<Lookup, Ask> asks = new LinkedHashMap<>();
    for (Sighting s : sightings) {
      Ask a = asks.computeIfAbsent(new Lookup(s.queueId(), s.at()), k -> new Ask());
      a.after = true;
      a.keep = true;
    }
    Map<String, Instant> earliest = new HashMap<>(); // one lookup for the lines of a queue id whose life is not known
    for (Delivery d : deliveries) {
      if (d.since() == null) {
        earliest.merge(d.fact().queueId(), d.fact().at(), (a, b) -> a.isBefore(b) ? a : b);
      }
    }
    for (Delivery d : deliveries) {
      if (rowAt(mapped.get(d.fact().queueId()), d.fact().at(), d.since()) != null) {
        continue;
      }
      Ask a = asks.computeIfAbsent(new Lookup(d.fact().queueId(), d.since() != null ? d.since() : earliest.get(d.fact().queueId())),
          k -> new Ask());
      a.after |= d.since() != null;
      a.wide |= d.wide();
      a.keep |= d.keep();
    }
    if (asks.isEmpty()) {
      return Future.succeededFuture();
    }
    int n = asks.size();
    String[] ids = new String[n];
    OffsetDateTime[] times = new OffsetDateTime[n];
    Boolean[] after = new Boolean[n];
    UUID[] lo = new UUID[n];
    UUID[] hi = new UUID[n];
    Boolean[] keep = new Boolean[n];
    List<Instant[]> windows = new ArrayList<>();
    int i = 0;
    for (Map.Entry<Lookup, Ask> e : asks.entrySet()) {
      Instant t = e.getKey().at();
      Instant from = t.minus(e.getValue().wide ? BEFORE : TIGHT);
      Instant to = t.plus(e.getValue().wide ? AFTER : TIGHT);
      ids[i] = e.getKey().queueId();
      times[i] = t.atOffset(ZoneOffset.UTC);
      after[i] = e.getValue().after;
      lo[i] = LedgerIds.lowest(from);
      hi[i] = LedgerIds.lowest(to);
      keep[i] = e.getValue().keep;
      windows.add(new Instant[] {from, to});
      i++;
    }
    List<Instant[]> ranges = merged(windows);
    return c.preparedQuery(LOOKUP).execute(Tuple.tuple().addValue(ids).addValue(times).addValue(after).addValue(lo).addValue(hi)
            .addValue(keep).addValue(ranges.stream().map(r -> LedgerIds.lowest(r[0])).toArray(UUID[]::new))
            .addValue(ranges.stream().map(r -> LedgerIds.lowest(r[1])).toArray(UUID[]::new)))
        .onSuccess(rows -> rows.forEach(r -> add(mapped, r))).mapEmpty();
  }

  /** The windows as the fewest disjoint ranges, oldest first: each row is read once. */
  static List<Instant[]> merged(List<Instant[]> windows) {
    List<Instant[]> sorted = new ArrayList<>(windows);
    sorted.sort((a, b) -> a[0].compareTo(b[0]));
    List<Instant[]> out = new ArrayList<>();
    for (Instant[] w : sorted) {
      Instant[] last = out.isEmpty() ? null : out.get(out.size() - 1);
      if (last != null && !w[0].isAfter(last[1])) {
        last[1] = w[1].isAfter(last[1]) ? w[1] : last[1];
      } else {
        out.add(new Instant[] {w[0], w[1]});
      }
    }
    return out;
  }

  /** The recipient each delivery line names, among the rows its queue id maps to; then one insert of them all. */
  private Future<Void> facts(SqlConnection c, List<Delivery> deliveries, Map<String, List<Mapping>> mapped, List<String[]> recorded,
      List<Delivery> unmatched, List<SuppressionMessages.Entry> suppressed) {
    Map<Fact, UUID> rowOf = new LinkedHashMap<>();
    for (Delivery d : deliveries) {
      UUID row = rowAt(mapped.get(d.fact().queueId()), d.fact().at(), d.since());
      if (row == null) {
        unmatched.add(d);
      } else {
        rowOf.put(d.fact(), row);
      }
    }
    if (rowOf.isEmpty()) {
      return Future.succeededFuture();
    }
    UUID[] rows = rowOf.values().stream().distinct().toArray(UUID[]::new);
    return c.preparedQuery(RECIPIENTS).execute(Tuple.tuple().addValue(rows)).compose(recipients -> {
      Map<UUID, List<Row>> byMessage = new HashMap<>();
      recipients.forEach(r -> byMessage.computeIfAbsent(r.getUUID("message_id"), k -> new ArrayList<>()).add(r));
      List<Object[]> columns = new ArrayList<>();
      for (Map.Entry<Fact, UUID> e : rowOf.entrySet()) {
        Fact f = e.getKey();
        Row recipient = byMessage.getOrDefault(e.getValue(), List.of()).stream()
            .filter(r -> f.concerns(r.getString("address"))).findFirst().orElse(null);
        if (recipient == null) {
          continue; // a recipient Postfix added (an alias's expansion, a BCC map): not one of ours
        }
        columns.add(new Object[] {e.getValue(), recipient.getInteger("idx"), f.state(), f.at().atOffset(ZoneOffset.UTC), f.remoteHost(),
            f.dsn(), f.reply(), f.category(), f.rule(), Fact.SOURCE, f.evidence(), f.queueId(), Buffer.buffer(f.eventKey())});
      }
      if (columns.isEmpty()) {
        return Future.succeededFuture();
      }
      return write(c, columns).onSuccess(w -> {
        recorded.addAll(w.facts());
        suppressed.addAll(w.suppressed());
      }).mapEmpty();
    });
  }

  /**
   * The row of a line: among the mappings of its life (seen at or after its client= line, {@code since}, when known:
   * an earlier life of a reused queue id is another message), the newest seen at or before the line, else the newest.
   */
  private static UUID rowAt(List<Mapping> mappings, Instant at, Instant since) {
    if (mappings == null || mappings.isEmpty()) {
      return null;
    }
    Mapping best = null;
    Mapping newest = null;
    for (Mapping m : mappings) {
      if (since != null && m.seenAt().isBefore(since)) {
        continue;
      }
      if (!m.seenAt().isAfter(at) && (best == null || m.seenAt().isAfter(best.seenAt()))) {
        best = m;
      }
      if (newest == null || m.seenAt().isAfter(newest.seenAt())) {
        newest = m;
      }
    }
    return best != null ? best.messageId() : newest == null ? null : newest.messageId();
  }

  /** The facts' one statement ({@link #INSERT}), after the shared lock every writer of facts takes ({@link #FACTS_LOCK}). */
  static Future<io.vertx.sqlclient.RowSet<Row>> insertFacts(SqlConnection c, List<Object[]> columns) {
    return c.query(FACTS_LOCK).execute().compose(l -> c.preparedQuery(INSERT).execute(arrays(columns)));
  }

  private static Tuple arrays(List<Object[]> columns) {
    int n = columns.size();
    Object[][] cols = {new UUID[n], new Integer[n], new String[n], new OffsetDateTime[n], new String[n], new String[n],
        new String[n], new String[n], new String[n], new String[n], new String[n], new String[n], new Buffer[n]};
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < cols.length; j++) {
        cols[j][i] = columns.get(i)[j];
      }
    }
    Tuple t = Tuple.tuple();
    for (Object[] col : cols) {
      t.addValue(col);
    }
    return t;
  }


  /**
   * Facts already matched to their recipients (columns as {@link #INSERT} takes them: the downstream follower's), in one
   * transaction through {@link #write}, so with their events and the suppression list's feed. A fact recorded before
   * adds nothing.
   */
  Future<Recorded> recordMatched(List<Object[]> columns) {
    if (columns.isEmpty()) {
      return Future.succeededFuture(new Recorded(List.of(), List.of(), List.of()));
    }
    return policy.run("tracking", () -> pool.withTransaction(c -> write(c, columns)));
  }

  /**
   * Facts in {@code c}'s transaction through the facts' statement (so with their events), then the suppression list
   * fed by the new hard bounces among them (docs/design.md §8.8), as every source of facts does: the facts recorded
   * (state and category each) and the entries added. A fact recorded before adds nothing, to either.
   */
  Future<Recorded> write(SqlConnection c, List<Object[]> columns) {
    return insertFacts(c, columns).compose(inserted -> {
      List<String[]> recorded = new ArrayList<>();
      List<Long> feeding = new ArrayList<>();
      inserted.forEach(x -> {
        recorded.add(new String[] {x.getString("state"), x.getString("category")});
        if (bounces.feeds(x.getString("state"), x.getString("category"))) {
          feeding.add(x.getLong("id")); // a hard bounce another source reported first already made its entry: none twice
        }
      });
      return bounces.added(c, feeding).map(added -> new Recorded(recorded, List.of(), added));
    });
  }

  /**
   * When the oldest relayed row without any fact was received, or null when there is none. Read from a minute before
   * the row of the newest fact (the rows before it have had their news: a few in flight when the smarthost's log is
   * followed, all of them since when it stopped being readable), or from {@code horizon} when there is no fact yet: a
   * few rows' reads however long the ledger.
   */
  Future<Instant> oldestWithoutNews(Instant horizon) {
    return pool.query(LAST_FACT).execute().compose(last -> {
      Instant from = horizon;
      if (last.size() > 0) {
        Instant newest = LedgerIds.instant(last.iterator().next().getUUID("message_id")).minus(java.time.Duration.ofMinutes(1));
        from = newest;
      }
      return pool.preparedQuery(OLDEST_WITHOUT_NEWS).execute(Tuple.of(LedgerIds.lowest(from)));
    }).map(rows -> rows.size() == 0 ? null : rows.iterator().next().getOffsetDateTime("received_at").toInstant());
  }

  /**
   * {@link #prune} one batch after another while a batch comes back full, at most {@code batches} of them; answers the
   * facts deleted.
   */
  Future<Long> pruneAll(UUID cutoff, int limit, int batches) {
    return prune(cutoff, limit).compose(n -> n < limit || batches <= 1 ? Future.succeededFuture((long) n)
        : pruneAll(cutoff, limit, batches - 1).map(rest -> n + rest));
  }


  /** Deletes up to {@code limit} facts and as many mappings of message ids below {@code cutoff}; answers the facts deleted. */
  Future<Integer> prune(UUID cutoff, int limit) {
    return pool.preparedQuery(PRUNE_FACTS).execute(Tuple.of(cutoff, limit))
        .compose(facts -> pool.preparedQuery(PRUNE_QUEUE_IDS).execute(Tuple.of(cutoff, limit))
            .compose(q -> pool.preparedQuery(PRUNE_DSNS).execute(Tuple.of(cutoff, limit))).map(q -> facts.rowCount()));
  }
}
