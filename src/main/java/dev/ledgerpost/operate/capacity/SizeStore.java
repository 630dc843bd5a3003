package dev.ledgerpost.operate.capacity;

import dev.ledgerpost.operate.capacity.CapacityMessages.LedgerSize;
import dev.ledgerpost.operate.capacity.CapacityMessages.SizeQuery;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The capacity watch's SQL, on the capacity watch's context ({@link CapacityVerticle}). Every statement reads the
 * catalog or one end of the messages' primary key: nothing here scans a table, so it costs the same on a ledger of a
 * thousand rows or a billion.
 */
public final class SizeStore {
  /**
   * Row estimates from pg_class.reltuples (kept by ANALYZE and autovacuum; -1 before the first, read as 0), summed
   * over every table in the inheritance tree of each name (pg_inherits, all levels), so a partitioned table counts its
   * partitions. A partitioned parent holds no rows of its own: only the leaves count.
   */
  private static final String ROWS = """
      WITH RECURSIVE tree(name, oid) AS (
        SELECT t.name, to_regclass(t.name)::oid FROM unnest($1::text[]) AS t(name)
        UNION ALL
        SELECT tree.name, i.inhrelid FROM tree JOIN pg_inherits i ON i.inhparent = tree.oid)
      SELECT tree.name, coalesce(sum(greatest(c.reltuples, 0)) FILTER (WHERE c.relkind <> 'p'), 0)::bigint AS estimate
        FROM tree LEFT JOIN pg_class c ON c.oid = tree.oid
       GROUP BY tree.name""";
  /** The smallest id by the primary key, read once: one index probe (per partition, messages being partitioned by id). */
  private static final String OLDEST = """
      SELECT pg_database_size(current_database()) AS bytes, o.id AS oldest_id, o.received_at AS oldest_at
        FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT id, received_at FROM messages ORDER BY id LIMIT 1) AS o ON true""";

  private final Pool pool;

  /** Serves its address on the context it is made on. */
  public SizeStore(Database db, Bus bus) {
    pool = db.pool();
    bus.serve(CapacityMessages.SIZE, SizeQuery.class, this::size);
  }

  Future<LedgerSize> size(SizeQuery q) {
    return pool.preparedQuery(ROWS).execute(Tuple.of(q.tables().toArray(new String[0]))).compose(rows -> {
      Map<String, Long> estimates = new LinkedHashMap<>();
      for (String t : q.tables()) {
        estimates.put(t, 0L);
      }
      for (Row r : rows) {
        estimates.put(r.getString("name"), r.getLong("estimate"));
      }
      return pool.query(OLDEST).execute().map(o -> {
        Row r = o.iterator().next();
        return new LedgerSize(r.getLong("bytes"), Map.copyOf(estimates), r.getUUID("oldest_id"),
            r.getOffsetDateTime("oldest_at"));
      });
    });
  }
}
