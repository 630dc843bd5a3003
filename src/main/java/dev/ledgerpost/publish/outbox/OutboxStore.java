package dev.ledgerpost.publish.outbox;

import dev.ledgerpost.publish.outbox.OutboxMessages.History;
import dev.ledgerpost.publish.outbox.OutboxMessages.HistoryPage;
import dev.ledgerpost.publish.outbox.OutboxMessages.Prune;
import dev.ledgerpost.publish.outbox.OutboxMessages.Pruned;
import dev.ledgerpost.publish.outbox.OutboxMessages.Published;
import dev.ledgerpost.publish.outbox.OutboxMessages.Receipt;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.ledger.LedgerWriter;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.pgclient.pubsub.PgSubscriber;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox's SQL, on the outbox relay's context ({@link OutboxVerticle}): publishing in one serialised transaction, history for
 * resuming, retention, receipts; and its LISTEN connection (docs/design.md §6.3).
 *
 * <p>A row holds one event, or the events of one group-committed statement (docs/design.md §6.1). Rows are
 * published whole: a row's pub_seq is its first event's, and its events follow gap-free. Events of a
 * batch row carry no payload of their own: it is read from their message (its fields that never
 * change, and the status and version the row recorded for each event).
 */
public final class OutboxStore {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxStore.class);
  /** At most this many events in one row (the group commit's batch cap; a CHECK in V40 holds it). */
  private static final int MAX_EVENTS_PER_ROW = LedgerWriter.MAX_BATCH;
  private static final OutboxMessages.Wake WAKE = new OutboxMessages.Wake();
  /** Every event of the rows whose seq the subquery {@code %s} gives (V40's view: one definition of an event's payload). */
  private static final String EVENTS = """
      SELECT seq, pub_seq, event_id, message_id, type, payload::text AS payload, auth_user, created_at
        FROM outbox_events WHERE seq IN (%s)""";
  /** The publisher's row: the last number given out, and the horizon of its scan (V118). */
  private static final String LOCK_PUBLISHER =
      "SELECT last_pub_seq, xid_horizon::text AS xid_horizon FROM outbox_publisher WHERE id = 1 FOR UPDATE";
  /**
   * The committed rows not yet published: those of the transactions at or above the horizon ($1) that have no
   * outbox_pub row, in the order of their transactions (xid, then seq). Every row also carries this statement's
   * snapshot's xmin (the oldest transaction still running), and a row of nulls carries it alone when nothing is
   * unpublished: a pass that saw every unpublished row may raise the horizon to it (V118, docs/design.md §6.2).
   * Written so that any plan, generic or custom, reads outbox_xid_idx from the horizon and probes outbox_pub's key per
   * row: ordered by the index's column under a LIMIT, and the probe a LATERAL with its own LIMIT, which the planner
   * cannot turn into a hash anti-join over all of outbox_pub (a NOT EXISTS's generic plan: 1.4 s at a million rows).
   */
  static final String UNPUBLISHED = """
      WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin)
      SELECT s.xmin, u.seq, u.n FROM s LEFT JOIN LATERAL (
        SELECT o.xid, o.seq, coalesce(cardinality(o.message_ids), 1) AS n FROM outbox o
          LEFT JOIN LATERAL (SELECT true AS published FROM outbox_pub p WHERE p.seq = o.seq LIMIT 1) x ON true
         WHERE o.xid >= $1::xid8 AND x.published IS NULL
         ORDER BY o.xid, o.seq
         LIMIT $2) u ON true
       ORDER BY u.xid, u.seq""";
  /** Every row of a pass in one statement: ($1[i], $2[i]) = (seq, pub_seq). Narrow and insert-only: the outbox row is never rewritten. */
  private static final String MARK = """
      INSERT INTO outbox_pub (seq, pub_seq) SELECT * FROM unnest($1::bigint[], $2::bigint[])""";
  private static final String ADVANCE = """
      UPDATE outbox_publisher SET last_pub_seq = $1, xid_horizon = greatest(xid_horizon, $2::xid8) WHERE id = 1""";
  private static final String RAISE_HORIZON =
      "UPDATE outbox_publisher SET xid_horizon = $1::xid8 WHERE id = 1 AND xid_horizon < $1::xid8";
  /** The rows holding events after $1: a row starts at most MAX_EVENTS_PER_ROW - 1 events before its last one. */
  private static final String HISTORY = EVENTS.formatted("""
      SELECT seq FROM outbox_pub WHERE pub_seq > $1 - %d ORDER BY pub_seq LIMIT $2 + %d""".formatted(MAX_EVENTS_PER_ROW,
      MAX_EVENTS_PER_ROW)) + """

         AND pub_seq > $1
       ORDER BY pub_seq
       LIMIT $2""";
  private static final String STATE = "SELECT last_pub_seq, pruned_through FROM outbox_publisher WHERE id = 1";
  /**
   * The oldest published rows (in pub_seq order, at most a batch) that are older than the retention, deleted with their
   * outbox_pub rows; answers the pub_seq of each one's last event.
   */
  private static final String PRUNE = """
      WITH head AS (
        SELECT seq, pub_seq, published_at FROM outbox_pub ORDER BY pub_seq LIMIT #{batch}),
      doomed AS (
        SELECT h.seq, h.pub_seq + coalesce(cardinality(o.message_ids), 1) - 1 AS last
          FROM head h JOIN outbox o ON o.seq = h.seq
         WHERE h.published_at < now() - make_interval(secs => #{seconds})),
      gone AS (
        DELETE FROM outbox o USING doomed WHERE o.seq = doomed.seq RETURNING o.seq, doomed.last)
      DELETE FROM outbox_pub p USING gone WHERE p.seq = gone.seq RETURNING gone.last""";
  private static final String PRUNED_THROUGH =
      "UPDATE outbox_publisher SET pruned_through = GREATEST(pruned_through, #{through}) WHERE id = 1";
  /**
   * Stores an ack only for an event the subscriber could see ($4: its user, null for the admin token): the same
   * rule as the hub's fan-out, on the event's message's auth_user. Answers how many events matched (0 or 1); an ack
   * already stored counts, so that a repeated ack is not refused.
   */
  private static final String RECEIPT = """
      WITH event AS (
        SELECT coalesce(o.message_id, o.message_ids[$1 - p.pub_seq + 1]) AS message_id
          FROM outbox_pub p JOIN outbox o ON o.seq = p.seq
         WHERE p.pub_seq <= $1 AND p.pub_seq > $1 - %d AND p.pub_seq + coalesce(cardinality(o.message_ids), 1) > $1),
      visible AS (
        SELECT e.message_id FROM event e LEFT JOIN messages m ON m.id = e.message_id
         WHERE $4::text IS NULL OR m.auth_user = $4::text),
      stored AS (
        INSERT INTO notify_receipts (pub_seq, message_id, subscriber, state)
        SELECT $1, message_id, $2, $3 FROM visible
        ON CONFLICT DO NOTHING)
      SELECT count(*) FROM visible""".formatted(MAX_EVENTS_PER_ROW);
  /**
   * The age of the oldest row the publisher's next passes would take (its UNPUBLISHED, the first 10,000 of them: a
   * gauge, which must not read a backlog whole every second), planned as UNPUBLISHED is.
   */
  static final String LAG = """
      SELECT coalesce(extract(epoch FROM now() - min(u.created_at)), 0)::float8 FROM (
        SELECT o.created_at FROM outbox o
          LEFT JOIN LATERAL (SELECT true AS published FROM outbox_pub p WHERE p.seq = o.seq LIMIT 1) x ON true
         WHERE o.xid >= (SELECT xid_horizon FROM outbox_publisher WHERE id = 1) AND x.published IS NULL
         ORDER BY o.xid, o.seq
         LIMIT 10000) u""";

  /** Channel of the publisher's notice to every node's hub; its payload is the last pub_seq (docs/design.md §9.3). */
  static final String PUBLISHED_CHANNEL = "ledgerpost_published";
  private static final String NOTIFY_PUBLISHED = "SELECT pg_notify('" + PUBLISHED_CHANNEL + "', $1)";

  private final Pool pool;
  /** The pass's own connections, on generic plans (Database.hotPool): it runs after every commit that wrote events. */
  private final Pool hotPool;
  private final PgSubscriber subscriber;
  private final Future<Void> listening;
  private final Database db;
  private final Runnable wakeUp;

  /** Serves the outbox's addresses on {@code context}, the one it is made on, and wakes its relay after commits. */
  public OutboxStore(Database db, Context context) {
    this.db = db;
    pool = db.pool();
    hotPool = db.hotPool();
    Bus bus = Bus.of(context.owner());
    OutboxWake wake = new OutboxWake(context, pool, bus);
    wakeUp = wake::committed;
    db.onOutboxWritten(wakeUp);
    bus.serve(OutboxMessages.PUBLISH, OutboxMessages.Publish.class, p -> publish(p.limit()));
    bus.serve(OutboxMessages.HISTORY, History.class, this::history);
    bus.serve(OutboxMessages.PRUNE, Prune.class, this::prune);
    bus.serve(OutboxMessages.RECEIPT, Receipt.class, this::receipt);
    bus.serve(OutboxMessages.LAG, OutboxMessages.Lag.class, l -> lag());
    bus.serve(OutboxMessages.HEAD, OutboxMessages.Head.class, h -> head());
    subscriber = PgSubscriber.subscriber(context.owner(), db.connectOptions()).reconnectPolicy(retries -> 1000L);
    listening = listen(bus);
  }

  /** Completes once the LISTEN connection is up (or given up on: then the relay polls only). */
  public Future<Void> started() {
    return listening;
  }

  /**
   * LISTEN for committed outbox rows (the publisher's wake-up) and for published events (every hub's). A
   * notification is only a wake-up: the relay and the hubs poll as well, so a lost notification (or a
   * subscriber down while PostgreSQL restarts) delays events, never loses them.
   */
  private Future<Void> listen(Bus bus) {
    subscriber.channel(OutboxWake.CHANNEL).handler(payload -> bus.publish(OutboxMessages.WAKE, WAKE));
    subscriber.channel(PUBLISHED_CHANNEL).handler(payload -> {
      try {
        bus.publish(OutboxMessages.PUBLISHED, new OutboxMessages.PublishedUpTo(Long.parseLong(payload)));
      } catch (NumberFormatException e) {
        LOG.debug("ignoring a {} notification with payload {}", PUBLISHED_CHANNEL, payload);
      }
    });
    return subscriber.connect().recover(e -> {
      LOG.warn("cannot LISTEN for outbox notifications ({}); the outbox relay polls only", e.getMessage());
      return Future.succeededFuture();
    });
  }

  /** No more wake-ups from the ledger's commits, and the LISTEN connection closed; the pool stays the ledger's. */
  public Future<Void> stop() {
    db.noLongerOnOutboxWritten(wakeUp);
    return subscriber.close();
  }

  /**
   * Takes the publisher row lock (so only one publisher in any process runs at a time), then every
   * committed row not yet published, in the order of their transactions, and numbers their events after the last published one.
   * Rows become visible in commit order, not seq order, so there is no cursor over seq (docs/design.md §6.2).
   * Nothing is read back: the pass answers the numbers it gave out, and whoever wants the events (a hub with
   * subscribers, a webhook endpoint) reads them through {@code outbox_events} (V118).
   */
  Future<Published> publish(int limit) {
    return hotPool.withTransaction(conn -> conn.query(LOCK_PUBLISHER).execute().compose(lock -> {
      Row publisher = lock.iterator().next();
      long last = publisher.getLong("last_pub_seq");
      String horizon = publisher.getString("xid_horizon");
      return conn.preparedQuery(UNPUBLISHED).execute(Tuple.of(horizon, limit)).compose(rows -> {
        List<Long> seqs = new ArrayList<>();
        List<Long> pubSeqs = new ArrayList<>();
        String xmin = horizon;
        long next = last;
        for (Row row : rows) {
          xmin = row.getString("xmin");
          if (row.getValue("seq") == null) {
            continue; // the row of nulls: nothing unpublished
          }
          seqs.add(row.getLong("seq"));
          pubSeqs.add(next + 1);
          next += row.getInteger("n");
        }
        // Only a pass that took every unpublished row it could see proves every transaction below its xmin published.
        String newHorizon = seqs.size() < limit ? xmin : horizon;
        if (seqs.isEmpty()) {
          Future<?> raised = newHorizon.equals(horizon) ? Future.succeededFuture()
              : conn.preparedQuery(RAISE_HORIZON).execute(Tuple.of(newHorizon));
          return raised.map(x -> Published.NONE);
        }
        long newLast = next;
        return conn.preparedQuery(MARK).execute(Tuple.tuple(List.of(seqs.toArray(new Long[0]), pubSeqs.toArray(new Long[0]))))
            .compose(x -> conn.preparedQuery(ADVANCE).execute(Tuple.of(newLast, newHorizon)))
            .map(x -> new Published(seqs.size(), last + 1, newLast));
      });
    })).onSuccess(p -> {
      if (p.rows() > 0) {
        // After the commit and outside it, so the notification lock never holds up a publish: other nodes' hubs tail.
        pool.preparedQuery(NOTIFY_PUBLISHED).execute(Tuple.of(Long.toString(p.lastPubSeq())));
      }
    });
  }

  /** The last pub_seq given out so far. */
  Future<OutboxMessages.PublishedUpTo> head() {
    return pool.query(STATE).execute().map(rows -> new OutboxMessages.PublishedUpTo(rows.iterator().next().getLong("last_pub_seq")));
  }

  /**
   * Up to {@code limit} published events after {@code since}; a per-user subscriber's page keeps only
   * that user's, and says how far it looked ({@code scannedThrough}) so that a page thinned by the
   * filter is never taken for the end of the history.
   */
  Future<HistoryPage> history(History h) {
    return pool.withConnection(conn -> conn.query(STATE).execute().compose(state -> {
      Row s = state.iterator().next();
      long last = s.getLong("last_pub_seq");
      long pruned = s.getLong("pruned_through");
      return conn.preparedQuery(HISTORY).execute(Tuple.of(h.since(), h.limit())).map(rows -> {
        List<OutboxEvent> events = new ArrayList<>();
        long scanned = h.since();
        for (Row r : rows) {
          OutboxEvent e = event(r);
          scanned = Math.max(scanned, e.pubSeq());
          if (h.user() == null || h.user().equals(e.authUser())) {
            events.add(e);
          }
        }
        return new HistoryPage(List.copyOf(events), pruned, last, rows.size() < h.limit() ? Math.max(scanned, last) : scanned);
      });
    }));
  }

  /** Deletes one bounded batch of published events older than the retention. */
  Future<Pruned> prune(Prune p) {
    return pool.withTransaction(conn -> SqlTemplate.forQuery(conn, PRUNE)
        .execute(Map.of("seconds", (double) p.retention().toSeconds(), "batch", p.batch()))
        .compose(rows -> {
          long through = 0;
          for (Row r : rows) {
            through = Math.max(through, r.getLong(0));
          }
          int deleted = rows.rowCount();
          if (deleted == 0) {
            return Future.succeededFuture(new Pruned(0));
          }
          return SqlTemplate.forUpdate(conn, PRUNED_THROUGH).execute(Map.of("through", through)).map(x -> new Pruned(deleted));
        }));
  }

  Future<OutboxMessages.LagSeconds> lag() {
    return pool.query(LAG).execute().map(rows -> new OutboxMessages.LagSeconds(rows.iterator().next().getDouble(0)));
  }

  Future<OutboxMessages.ReceiptStored> receipt(Receipt r) {
    return pool.preparedQuery(RECEIPT).execute(Tuple.of(r.pubSeq(), r.subscriber(), r.state(), r.user()))
        .map(rows -> new OutboxMessages.ReceiptStored(rows.iterator().next().getLong(0) > 0));
  }

  private static OutboxEvent event(Row row) {
    return new OutboxEvent(row.getLong("pub_seq"), row.getString("event_id"), row.getUUID("message_id"),
        row.getString("type"), row.getString("payload"), row.getString("auth_user"), row.getOffsetDateTime("created_at"));
  }

  static OffsetDateTime now() {
    return OffsetDateTime.now(ZoneOffset.UTC);
  }
}
