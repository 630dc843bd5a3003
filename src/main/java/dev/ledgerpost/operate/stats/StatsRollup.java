package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.RolledUp;
import dev.ledgerpost.operate.stats.StatsMessages.Rollup;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The roll-up of the ledger into {@code stats_hours} (docs/design.md §8.12, docs/data-model.md §5.22), one hour at a time,
 * each hour one short transaction of its own; never a statement of the hot path. A pass:
 * <ol>
 *   <li>prunes the roll-up below the oldest ledger row (retention dropped those weeks, §5.12);</li>
 *   <li>redoes every rolled hour one of whose open rows (kept in {@code stats_open}) has been closed since: by a late
 *       settle, a manual resolution or an accepted reconcile proposal, the only writers that change a status after the
 *       open, and only ever from PENDING or UNKNOWN;</li>
 *   <li>rolls the closed hours not rolled yet (ended at least {@link #DELAY} ago), newest first, at most a pass's worth.</li>
 * </ol>
 * An erasure needs nothing here: it rewrites {@code stats_hours.auth_user} in its own transaction with the same
 * replacement as {@code messages.auth_user} (it covers every text column of the schema, §8.6).
 */
final class StatsRollup {
  /**
   * How long after its end an hour is rolled: longer than any open takes to commit after its id was issued (the send
   * API issues the id before MAIL and RCPT at the smarthost) plus the nodes' clock skew, so no row arrives in an hour
   * already rolled.
   */
  static final Duration DELAY = Duration.ofHours(1);
  private static final String PRUNE = """
      WITH lo AS (SELECT coalesce((SELECT ledger_id_hour(id) FROM messages ORDER BY id LIMIT 1), 'infinity') AS h),
      a AS (DELETE FROM stats_hours WHERE hour < (SELECT h FROM lo)),
      b AS (DELETE FROM stats_hour_tags WHERE hour < (SELECT h FROM lo)),
      c AS (DELETE FROM stats_open WHERE hour < (SELECT h FROM lo)),
      d AS (DELETE FROM stats_rolled WHERE hour < (SELECT h FROM lo) RETURNING 1),
      e AS (DELETE FROM stats_days WHERE day < (SELECT h FROM lo)),
      f AS (DELETE FROM stats_days_rolled WHERE day < (SELECT h FROM lo))
      SELECT (SELECT count(*) FROM d) AS pruned, (SELECT h FROM lo) AS lo""";
  /** Rolled hours holding a row that was open when rolled and is closed now (a probe by id each: the table is small). */
  private static final String FOLD = """
      SELECT DISTINCT p.hour FROM stats_open p JOIN messages m ON m.id = p.id
       WHERE m.status NOT IN ('PENDING', 'UNKNOWN') ORDER BY p.hour""";
  private static final String TODO = """
      SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
       WHERE NOT EXISTS (SELECT 1 FROM stats_rolled r WHERE r.hour = g.h) ORDER BY g.h DESC LIMIT $3""";
  /** One hour (again): V106's stats_roll_hour, which bench/stats.sh calls too (docs/data-model.md §5.22). */
  private static final String ROLL = "SELECT stats_roll_hour($1)";

  private final Pool pool;

  StatsRollup(Pool pool) {
    this.pool = pool;
  }

  Future<RolledUp> pass(Rollup r) {
    OffsetDateTime closed = OffsetDateTime.ofInstant(r.now().minus(DELAY).truncatedTo(ChronoUnit.HOURS), ZoneOffset.UTC);
    return pool.query(PRUNE).execute().compose(pruned -> {
      Row p = pruned.iterator().next();
      int prunedHours = p.getLong("pruned").intValue();
      OffsetDateTime lo = p.getOffsetDateTime("lo");
      return pool.query(FOLD).execute().compose(fold -> {
        List<OffsetDateTime> folds = new ArrayList<>();
        fold.forEach(row -> folds.add(row.getOffsetDateTime("hour")));
        return rollEach(folds).compose(v -> {
          if (lo == null || !lo.isBefore(closed)) { // an empty ledger ('infinity'), or nothing closed yet
            return Future.succeededFuture(new RolledUp(prunedHours, folds.size(), 0));
          }
          return pool.preparedQuery(TODO).execute(Tuple.of(lo.truncatedTo(ChronoUnit.HOURS), closed, r.maxHours()))
              .compose(todo -> {
                List<OffsetDateTime> hours = new ArrayList<>();
                todo.forEach(row -> hours.add(row.getOffsetDateTime("h")));
                return rollEach(hours).map(x -> new RolledUp(prunedHours, folds.size(), hours.size()));
              });
        });
      });
    });
  }

  /** The hours one after another, each its own transaction. */
  private Future<Void> rollEach(List<OffsetDateTime> hours) {
    Future<Void> chain = Future.succeededFuture();
    for (OffsetDateTime h : hours) {
      chain = chain.compose(v -> roll(h));
    }
    return chain;
  }

  Future<Void> roll(OffsetDateTime hour) {
    return pool.preparedQuery(ROLL).execute(Tuple.of(hour)).mapEmpty();
  }
}
