package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps {@link Suppressions} equal to the table (docs/design.md §8.8), on the part's context: every
 * {@code suppression.refreshInterval} it reads the list's version (one single-row read) and reads the whole list again
 * only when the version moved; after this node's own change at once. So another node's change applies here within one
 * interval (plus the read), this node's own before the request that made it is answered. A failed read
 * keeps the copy it has (the list is a guard, not a fact: a stale copy for a while beats refusing every recipient or none)
 * and the next interval tries again.
 */
final class SuppressionRefresh {
  private static final Logger LOG = LoggerFactory.getLogger(SuppressionRefresh.class);
  private static final String VERSION = "SELECT version FROM suppressions_version WHERE id = 1";
  /** One statement, so that the version and the entries are of one snapshot. */
  private static final String LOAD = """
      SELECT v.version, s.id, s.address, s.scope, s.reason, s.category, s.source, s.message_id, s.reply, s.added_by,
             s.added_at, s.expires_at
        FROM suppressions_version v LEFT JOIN suppressions s ON true
       WHERE v.id = 1""";

  private final Pool pool;
  private final Suppressions list;
  private boolean running;
  /**
   * A change came while a read ran: read again when it ends (it may have read before the change committed); those who
   * asked wait for that read.
   */
  private Promise<Void> next;

  SuppressionRefresh(Pool pool, Suppressions list) {
    this.pool = pool;
    this.list = list;
  }

  /** Reads the list again if its version moved; on the part's context. */
  Future<Void> poll() {
    return run(false);
  }

  /** Reads the list again whatever the version says: after this node's own change. */
  Future<Void> now() {
    return run(true);
  }

  private Future<Void> run(boolean force) {
    if (running) {
      if (next == null) {
        next = Promise.promise();
      }
      return next.future();
    }
    running = true;
    Future<Void> pass = force ? load() : pool.query(VERSION).execute()
        .compose(rows -> rows.iterator().next().getLong("version") == list.version() ? Future.succeededFuture() : load());
    return pass.recover(e -> {
      LOG.warn("suppression list not read ({}); this node keeps its copy and tries again", e.getMessage());
      return Future.succeededFuture();
    }).compose(v -> {
      running = false;
      Promise<Void> waiting = next;
      if (waiting != null) {
        next = null;
        run(true).onComplete(waiting);
      }
      return Future.succeededFuture();
    });
  }

  private Future<Void> load() {
    return pool.query(LOAD).execute().map(rows -> {
      long version = -1;
      Map<String, Entry> entries = new HashMap<>();
      for (Row r : rows) {
        version = r.getLong("version");
        if (r.getUUID("id") != null) {
          Entry e = SuppressionStore.entry(r);
          entries.put(Suppressions.key(e.scope(), e.address()), e);
        }
      }
      list.replace(version, entries);
      return null;
    });
  }
}
