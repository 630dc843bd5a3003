package dev.ledgerpost.operate.standby;

import dev.ledgerpost.operate.standby.StandbyMessages.StandbyQuery;
import dev.ledgerpost.operate.standby.StandbyMessages.Standbys;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;

/** The standby check's SQL, on its own context ({@link StandbyVerticle}): one read of a statistics view, no table. */
public final class StandbyStore {
  /**
   * pg_stat_replication has a row per WAL sender of the server the pool is connected to (the primary, for a ledger
   * that takes writes). A role without the privileges of pg_read_all_stats gets every column but the pid as NULL,
   * so its count would read 0 whatever the truth: the privilege is asked for beside it, and such a count is no
   * answer. A superuser has every role's privileges.
   */
  private static final String COUNT = """
      SELECT current_user::text AS role,
             pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS visible,
             (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS synchronous""";

  private final Pool pool;

  /** Serves its address on the context it is made on. */
  public StandbyStore(Database db, Bus bus) {
    pool = db.pool();
    bus.serve(StandbyMessages.COUNT, StandbyQuery.class, this::count);
  }

  Future<Standbys> count(StandbyQuery q) {
    return pool.query(COUNT).execute().map(rows -> {
      Row r = rows.iterator().next();
      return new Standbys(r.getString("role"), r.getBoolean("visible"), r.getLong("synchronous"));
    });
  }
}
