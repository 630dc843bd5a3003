package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Add;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.operate.suppression.SuppressionMessages.ListQuery;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Page;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Prune;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Pruned;
import dev.ledgerpost.operate.suppression.SuppressionMessages.Remove;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;
import dev.ledgerpost.platform.mail.Addresses;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The suppression list's statements (docs/design.md §8.8), on the part's context ({@link SuppressionVerticle}). An
 * entry and its {@code suppression.added} / {@code suppression.removed} event are one statement: the event commits
 * with the change it reports (§6.1). The event's {@code message_id} is the entry's id (the outbox's rows all name a
 * subject, and an entry is not a message): no message row matches it, so only admin subscribers and endpoints without
 * a user see these events.
 */
public final class SuppressionStore {
  /** The entry's columns, in {@link #entry}'s order. */
  static final String COLUMNS = "id, address, scope, reason, category, source, message_id, reply, added_by, added_at, expires_at";
  /** The event's payload, of the row {@code s}. */
  static final String PAYLOAD = """
      jsonb_build_object('id', s.id, 'address', s.address, 'scope', s.scope, 'reason', s.reason, 'category', s.category,
                         'source', s.source, 'messageId', s.message_id, 'reply', s.reply, 'addedBy', s.added_by,
                         'addedAt', s.added_at, 'expiresAt', s.expires_at)""";
  /** The same scope and address again renews the entry (its reason, source and expiry are the new ones). */
  private static final String ADD = """
      WITH s AS (
        INSERT INTO suppressions (address, scope, reason, category, source, message_id, reply, added_by, expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (scope, address) DO UPDATE SET reason = EXCLUDED.reason, category = EXCLUDED.category,
          source = EXCLUDED.source, message_id = EXCLUDED.message_id, reply = EXCLUDED.reply, added_by = EXCLUDED.added_by,
          added_at = now(), expires_at = EXCLUDED.expires_at
        RETURNING %s, (xmax = 0) AS created),
      e AS (
        INSERT INTO outbox (event_id, message_id, type, payload)
        SELECT s.id::text || ':added:' || txid_current(), s.id, 'suppression.added', %s FROM s)
      SELECT * FROM s""".formatted(COLUMNS, PAYLOAD);
  /** By id, or by scope and address; {@code $4} (a user's own scope) keeps a user to its entries. */
  private static final String REMOVE = """
      WITH s AS (
        DELETE FROM suppressions
         WHERE (($1::uuid IS NOT NULL AND id = $1) OR ($1::uuid IS NULL AND address = $2 AND scope = $3))
           AND ($4::text IS NULL OR scope = $4)
        RETURNING %s),
      e AS (
        INSERT INTO outbox (event_id, message_id, type, payload)
        SELECT s.id::text || ':removed:' || txid_current(), s.id, 'suppression.removed',
               %s || jsonb_build_object('removedBy', $5::text) FROM s)
      SELECT * FROM s""".formatted(COLUMNS, PAYLOAD);
  private static final String LIST = """
      SELECT %s FROM suppressions
       WHERE ($1::text IS NULL OR address = $1) AND ($2::text IS NULL OR scope = $2)
       ORDER BY address, scope LIMIT $3 OFFSET $4""".formatted(COLUMNS);
  /** Bounded: the retention job calls again while a batch comes back full. No event: nobody removed it. */
  private static final String PRUNE = """
      DELETE FROM suppressions WHERE id IN (SELECT id FROM suppressions WHERE expires_at <= $1 LIMIT $2)""";

  private final Pool pool;
  private final TransactionPolicy policy;
  private final Clock clock;
  private final GatewayConfig.Suppression config;
  private final Bus bus;
  /** After this node's own change: its cache reads the list again at once, not at the next poll. */
  private final java.util.function.Supplier<Future<Void>> changed;

  /** Serves its addresses on the context it is made on. */
  public SuppressionStore(Database db, Bus bus, Clock clock, GatewayConfig.Suppression config, java.util.function.Supplier<Future<Void>> changed) {
    this.pool = db.pool();
    this.policy = db.policy();
    this.clock = clock;
    this.config = config;
    this.bus = bus;
    this.changed = changed;
    bus.serve(SuppressionMessages.ADD, Add.class, this::add);
    bus.serve(SuppressionMessages.REMOVE, Remove.class, this::remove);
    bus.serve(SuppressionMessages.LIST, ListQuery.class, this::list);
    bus.serve(SuppressionMessages.PRUNE, Prune.class, this::prune);
    bus.serve(SuppressionMessages.IMPORT, SuppressionMessages.Import.class, this::importAll);
  }

  Future<Entry> add(Add a) {
    String problem = invalid(a);
    if (problem != null) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, problem));
    }
    Tuple t = tuple(a);
    return policy.run("suppression add", () -> pool.preparedQuery(ADD).execute(t)).compose(rows -> {
      Row r = rows.iterator().next();
      Entry e = entry(r);
      AuditLog.of(AuditEvent.SUPPRESSION_ADDED).with("suppression", e.id()).with("scope", e.scope())
          .with("source", e.source()).with("added_by", e.addedBy()).with("renewed", !r.getBoolean("created")).log();
      return committed().map(e);
    });
  }

  private Tuple tuple(Add a) {
    OffsetDateTime expires = a.expiresAt() != null ? a.expiresAt()
        : OffsetDateTime.now(clock).plus(config.ttlOf(blankToNull(a.category())));
    return Tuple.tuple().addValue(Suppressions.normalise(a.address())).addValue(a.scope()).addValue(a.reason().trim())
        .addValue(blankToNull(a.category())).addValue(a.source().label()).addValue(a.messageId()).addValue(a.reply())
        .addValue(a.addedBy().trim()).addValue(expires);
  }

  /**
   * Every entry of an import, each with its event, in one transaction (all or none), then one re-read of this node's
   * copy: an entry that is refused names its line (its index + 1) and nothing is added.
   */
  Future<SuppressionMessages.Imported> importAll(SuppressionMessages.Import i) {
    List<String> problems = new ArrayList<>();
    for (int n = 0; n < i.entries().size(); n++) {
      String problem = invalid(i.entries().get(n));
      if (problem != null) {
        problems.add("entry " + (n + 1) + ": " + problem);
      }
    }
    if (!problems.isEmpty()) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, String.join("; ",
          problems.subList(0, Math.min(10, problems.size()))) + (problems.size() > 10 ? "; ..." : "")));
    }
    List<Tuple> tuples = i.entries().stream().map(this::tuple).toList();
    return policy.run("suppression import", () -> pool.withTransaction(conn -> {
      int[] counts = new int[2];
      Future<Void> chain = Future.succeededFuture();
      for (Tuple t : tuples) {
        chain = chain.compose(v -> conn.preparedQuery(ADD).execute(t).map(rows -> {
          counts[rows.iterator().next().getBoolean("created") ? 0 : 1]++;
          return null;
        }));
      }
      return chain.map(v -> new SuppressionMessages.Imported(counts[0], counts[1]));
    })).compose(done -> {
      AuditLog.of(AuditEvent.SUPPRESSION_IMPORTED).with("added", done.added()).with("renewed", done.renewed())
          .with("added_by", i.entries().isEmpty() ? null : i.entries().get(0).addedBy()).log();
      return committed().map(done);
    });
  }

  /** Why an entry cannot be added, or null; the import's route asks first, to name the line. */
  static String invalid(Add a) {
    if (a.address() == null || !Addresses.valid(Suppressions.normalise(a.address()))) {
      return "address " + (a.address() == null ? "is required" : a.address() + " is not a mailbox (local-part@domain)");
    }
    if (a.scope() == null || !Suppressions.validScope(a.scope())) {
      return "scope must be `global` or `user:<name>`";
    }
    if (a.reason() == null || a.reason().isBlank()) {
      return "an entry says why (reason)";
    }
    if (a.addedBy() == null || a.addedBy().isBlank()) {
      return "an entry names who added it";
    }
    return null;
  }

  Future<Entry> remove(Remove r) {
    if (r.id() == null && (r.address() == null || r.scope() == null)) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, "name the entry: its id, or address and scope"));
    }
    String address = r.address() == null ? null : Suppressions.normalise(r.address());
    Tuple t = Tuple.tuple().addValue(r.id()).addValue(address).addValue(r.scope()).addValue(r.ownScope()).addValue(r.removedBy());
    return policy.run("suppression remove", () -> pool.preparedQuery(REMOVE).execute(t)).compose(rows -> {
      if (rows.rowCount() == 0) {
        return Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no such suppression entry"));
      }
      Entry e = entry(rows.iterator().next());
      AuditLog.of(AuditEvent.SUPPRESSION_REMOVED).with("suppression", e.id()).with("scope", e.scope())
          .with("removed_by", r.removedBy()).log();
      return committed().map(e);
    });
  }

  Future<Page> list(ListQuery q) {
    String address = q.address() == null ? null : Suppressions.normalise(q.address());
    Tuple t = Tuple.of(address, q.scope(), q.limit() + 1, q.offset());
    return policy.run("suppression list", () -> pool.preparedQuery(LIST).execute(t)).map(rows -> {
      List<Entry> entries = new ArrayList<>();
      for (Row r : rows) {
        entries.add(entry(r));
      }
      boolean more = entries.size() > q.limit();
      return new Page(more ? List.copyOf(entries.subList(0, q.limit())) : List.copyOf(entries), q.offset(), more);
    });
  }

  Future<Pruned> prune(Prune p) {
    OffsetDateTime now = OffsetDateTime.now(clock);
    return policy.run("suppression prune", () -> pool.preparedQuery(PRUNE).execute(Tuple.of(now, p.limit())))
        .map(RowSet::rowCount).map(Pruned::new);
  }

  /** Wakes this node's outbox relay (other nodes' poll) and reads this node's cache again: the change applies here before the answer. */
  private Future<Void> committed() {
    bus.publish(OutboxMessages.WAKE, new OutboxMessages.Wake());
    return changed.get();
  }

  static Entry entry(Row r) {
    return new Entry(r.getUUID("id"), r.getString("address"), r.getString("scope"), r.getString("reason"),
        r.getString("category"), r.getString("source"), r.getUUID("message_id"), r.getString("reply"),
        r.getString("added_by"), utc(r.getOffsetDateTime("added_at")), utc(r.getOffsetDateTime("expires_at")));
  }

  private static OffsetDateTime utc(OffsetDateTime t) {
    return t == null ? null : t.withOffsetSameInstant(ZoneOffset.UTC);
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }
}
