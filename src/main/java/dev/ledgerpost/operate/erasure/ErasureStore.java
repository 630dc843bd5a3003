package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.operate.erasure.ErasureMessages.Erase;
import dev.ledgerpost.operate.erasure.ErasureMessages.Erased;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.mail.Addresses;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Erasure (docs/design.md §8.6), on the erasure part's context ({@link ErasureVerticle}): one transaction replaces an
 * address in every text, JSON and text-array column of every table of the ledger's schema (found in the catalog at each
 * erasure, so a column or table added later is covered without a change here), then records the erasure in the
 * append-only {@code erasures} table. Only the matching values change: no status, version, count or id.
 */
public final class ErasureStore {
  /**
   * Every column that can hold text, of every table (a partitioned one once, through its parent). Left out: Flyway's
   * history, and {@code erasures}, which refuses changes; its new row is written without the address instead.
   */
  private static final String COLUMNS = """
      SELECT c.relname AS table_name, a.attname AS column_name, t.typname AS type
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
        JOIN pg_type t ON t.oid = a.atttypid
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
         AND t.typname IN ('text', 'varchar', 'json', 'jsonb', '_text', '_varchar')
         AND c.relname NOT IN ('flyway_schema_history', 'erasures')
       ORDER BY c.relname, a.attnum""";
  /** $1 the pattern, $2 the hash, $3 who, $4 why: the last two without the address either. */
  private static final String RECORD = """
      INSERT INTO erasures (address_hash, key_id, requested_by, reason, rows_changed)
      VALUES ($2, $5, regexp_replace($3, $1, $2, 'gi'), regexp_replace($4, $1, $2, 'gi'), $6)
      RETURNING id, requested_by, reason, requested_at""";
  /**
   * The tables the hot path writes come first, in the order it writes them (a message, then its recipients), so
   * that an erasure and a settle of the same message wait for each other rather than deadlock.
   */
  private static final List<String> FIRST = List.of("messages", "recipients");
  /**
   * The resubmission claims of every message that holds the address (docs/contract.md §1.13): a claim is a hash, but of
   * the address among the rest, so whoever knows the message could still test it against the claim. Deleted before
   * the rows are changed (afterwards the address is no longer there to find them by); a retry of such a message is
   * then new mail, which is what erasure asks for.
   */
  private static final String CLAIMS = """
      DELETE FROM resubmission_claims c
       WHERE c.message_id IN (SELECT m.id FROM messages m WHERE m.mail_from ~* $1 OR m.auth_user ~* $1
                              UNION SELECT r.message_id FROM recipients r WHERE r.address ~* $1)""";
  /**
   * The address's suppression list entries (docs/design.md §8.8), in every scope: an entry is about the address and
   * nothing else, so a hash in its place would keep refusing nobody while still saying the address had been listed.
   * Their deletion bumps the list's version, so every node's copy drops them within suppression.refreshInterval.
   */
  private static final String SUPPRESSIONS = "DELETE FROM suppressions WHERE address ~* $1";
  /**
   * The captured bytes (docs/design.md §8.10) of every message that holds the address in its envelope or anywhere in
   * its bytes (a Cc or a signature the envelope does not name): a message cannot be rewritten without breaking what it
   * is, so it goes whole. Its ledger row stays CAPTURED, erased like any other. {@code encode(body, 'escape')} keeps
   * ASCII as it is, so the pattern finds the address in the headers and any 7-bit part.
   */
  private static final String CAPTURES = """
      DELETE FROM captures c
       WHERE c.message_id IN (SELECT m.id FROM messages m WHERE m.mail_from ~* $1 OR m.auth_user ~* $1
                              UNION SELECT r.message_id FROM recipients r WHERE r.address ~* $1)
          OR encode(c.body, 'escape') ~* $1""";
  /**
   * Columns whose values are two names joined by a '/', which is also a character of a local part: the hub's
   * subscriber names are {@code <principal>/<client>} (docs/design.md §6.4), and a client may name itself after an
   * address ({@code admin/ann@example.net}), where the pattern, which never starts inside a local part, does not see
   * it. In these the part after the first '/' is matched on its own as well.
   */
  private static final Set<String> SLASH_JOINED = Set.of("notify_receipts.subscriber");

  private final Vertx vertx;
  private final Pool pool;
  private final TransactionPolicy policy;
  private final ErasureKey key;

  /** Serves its address on the context it is made on. */
  public ErasureStore(Database db, Vertx vertx, ErasureKey key) {
    this.vertx = vertx;
    this.pool = db.pool();
    this.policy = db.policy();
    this.key = key;
    Bus.of(vertx).serve(ErasureMessages.ERASE, Erase.class, this::erase);
  }

  Future<Erased> erase(Erase e) {
    if (e.address() == null || !Addresses.valid(e.address())) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST,
          "address " + (e.address() == null ? "is required" : "is not a valid mailbox (local@domain)")));
    }
    if (e.operator() == null || e.operator().isBlank()) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, "an erasure names who asked for it"));
    }
    return vertx.executeBlocking(key::read, false).compose(k -> {
      ErasedAddress target = ErasedAddress.of(k, e.address());
      String keyId = ErasedAddress.keyId(k);
      return policy.run("erase", () -> pool.withTransaction(conn -> eraseIn(conn, target, keyId, e)));
    }).onSuccess(done -> AuditLog.of(AuditEvent.ERASURE).with("erasure", done.id()).with("address_hash", done.addressHash())
            .with("key_id", done.keyId()).with("requested_by", done.requestedBy()).with("rows", done.total())
            .with("tables", tables(done.rows())).log())
        .recover(x -> Future.failedFuture(x instanceof StoreException ? x
            : new StoreException(StoreException.Kind.PERSISTENCE, "erasure failed, nothing was changed: " + x.getMessage(), x)));
  }

  private static Future<Erased> eraseIn(SqlConnection conn, ErasedAddress target, String keyId, Erase e) {
    return conn.query(COLUMNS).execute().compose(columns -> {
      Map<String, List<Column>> byTable = new LinkedHashMap<>();
      for (String first : FIRST) {
        byTable.put(first, new ArrayList<>());
      }
      for (Row r : columns) {
        String table = r.getString("table_name");
        String column = r.getString("column_name");
        byTable.computeIfAbsent(table, t -> new ArrayList<>())
            .add(new Column(column, r.getString("type"), SLASH_JOINED.contains(table + "." + column)));
      }
      byTable.values().removeIf(List::isEmpty);
      Map<String, Long> rows = new LinkedHashMap<>();
      Future<Void> chain = conn.preparedQuery(CLAIMS).execute(Tuple.of(target.pattern())).map(deleted -> {
        if (deleted.rowCount() > 0) {
          rows.put("resubmission_claims", (long) deleted.rowCount());
        }
        return null;
      }).compose(v -> conn.preparedQuery(SUPPRESSIONS).execute(Tuple.of(target.pattern()))).map(deleted -> {
        if (deleted.rowCount() > 0) {
          rows.put("suppressions", (long) deleted.rowCount());
        }
        return null;
      }).compose(v -> conn.preparedQuery(CAPTURES).execute(Tuple.of(target.pattern()))).map(deleted -> {
        if (deleted.rowCount() > 0) {
          rows.put("captures", (long) deleted.rowCount()); // before the rows change: the address still finds them
        }
        return null;
      });
      for (Map.Entry<String, List<Column>> t : byTable.entrySet()) {
        chain = chain.compose(v -> conn.preparedQuery(update(t.getKey(), t.getValue()))
            .execute(Tuple.of(target.pattern(), target.hash()))
            .map(result -> {
              rows.merge(t.getKey(), (long) result.rowCount(), Long::sum); // suppressions: its deleted rows too
              return null;
            }));
      }
      return chain.compose(v -> conn.preparedQuery(RECORD)
          .execute(Tuple.of(target.pattern(), target.hash(), e.operator().trim(), e.reason(), keyId, json(rows)))
          .map(inserted -> {
            Row r = inserted.iterator().next();
            return new Erased(r.getLong("id"), target.hash(), keyId, r.getString("requested_by"), r.getString("reason"),
                r.getOffsetDateTime("requested_at"), Collections.unmodifiableMap(rows));
          }));
    });
  }

  private record Column(String name, String type, boolean slashJoined) {
    /** The column as text, for the match. */
    String text() {
      return type.equals("text") || type.equals("varchar") ? quoted(name) : quoted(name) + "::text";
    }

    /** Where the column holds the address: anywhere in it, or (slash-joined) in the part after its first '/'. */
    String matches() {
      if (slashJoined) {
        String q = quoted(name);
        return "(" + q + " ~* $1 OR substr(" + q + ", strpos(" + q + ", '/') + 1) ~* $1)";
      }
      return text() + " ~* $1";
    }

    /** The column with every occurrence replaced, as its own type (the hash needs no JSON or array quoting). */
    String replaced() {
      String q = quoted(name);
      if (slashJoined) { // text: each part on its own (without a '/', the part after it is the whole value)
        return "CASE WHEN strpos(" + q + ", '/') > 0 THEN regexp_replace(split_part(" + q + ", '/', 1), $1, $2, 'gi') || '/' "
            + "|| regexp_replace(substr(" + q + ", strpos(" + q + ", '/') + 1), $1, $2, 'gi') ELSE regexp_replace(" + q
            + ", $1, $2, 'gi') END";
      }
      return switch (type) {
        case "json", "jsonb" -> "regexp_replace(" + q + "::text, $1, $2, 'gi')::" + type;
        case "_text", "_varchar" -> "ARRAY(SELECT regexp_replace(e, $1, $2, 'gi') FROM unnest(" + q
            + ") WITH ORDINALITY AS u(e, o) ORDER BY o)::" + (type.equals("_text") ? "text[]" : "varchar[]");
        default -> "regexp_replace(" + q + ", $1, $2, 'gi')";
      };
    }
  }

  /** One statement per table, so that its row count is the number of its rows that held the address. */
  static String update(String table, List<Column> columns) {
    StringBuilder set = new StringBuilder();
    StringBuilder where = new StringBuilder();
    for (Column c : columns) {
      set.append(set.isEmpty() ? "" : ", ").append(quoted(c.name())).append(" = CASE WHEN ").append(c.matches())
          .append(" THEN ").append(c.replaced()).append(" ELSE ").append(quoted(c.name())).append(" END");
      where.append(where.isEmpty() ? "" : " OR ").append(c.matches());
    }
    return "UPDATE " + quoted(table) + " SET " + set + " WHERE " + where;
  }

  /** Names come from the catalog; quoted all the same, so that no name can be read as SQL. */
  static String quoted(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  static JsonObject json(Map<String, Long> rows) {
    JsonObject json = new JsonObject();
    rows.forEach(json::put);
    return json;
  }

  private static String tables(Map<String, Long> rows) {
    StringBuilder s = new StringBuilder();
    rows.forEach((t, n) -> {
      if (n > 0) {
        s.append(s.isEmpty() ? "" : ",").append(t).append(':').append(n);
      }
    });
    return s.toString();
  }
}
