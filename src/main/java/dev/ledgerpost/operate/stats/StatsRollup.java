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
 *   <li>rolls the closed hours not rolled yet (ended at least {@link #DELAY} ago), newest first, at most a pass's worth;</li>
 *   <li>moves the delivery roll-up ({@code stats_delivery_hours}, V114) to the facts recorded so far: a barrier that waits
 *       for the tracking transactions in progress gives the highest fact id all below which have committed; the recipients
 *       with newer facts in rolled hours are re-counted, then the same closed hours are rolled by delivery state, 24 a
 *       transaction.</li>
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
      f AS (DELETE FROM stats_days_rolled WHERE day < (SELECT h FROM lo)),
      g AS (DELETE FROM stats_delivery_hours WHERE hour < (SELECT h FROM lo)),
      i AS (DELETE FROM stats_delivery_rolled WHERE hour < (SELECT h FROM lo))
      SELECT (SELECT count(*) FROM d) AS pruned, (SELECT h FROM lo) AS lo""";
  /** Rolled hours holding a row that was open when rolled and is closed now (a probe by id each: the table is small). */
  private static final String FOLD = """
      SELECT DISTINCT p.hour FROM stats_open p JOIN messages m ON m.id = p.id
       WHERE m.status NOT IN ('PENDING', 'UNKNOWN') ORDER BY p.hour""";
  private static final String TODO = """
      SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
       WHERE NOT EXISTS (SELECT 1 FROM stats_rolled r WHERE r.hour = g.h) ORDER BY g.h DESC LIMIT $3""";
  private static final String DELIVERY_TODO = """
      SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
       WHERE NOT EXISTS (SELECT 1 FROM stats_delivery_rolled r WHERE r.hour = g.h) ORDER BY g.h DESC LIMIT $3""";
  private static final String BARRIER = "SELECT stats_delivery_barrier() AS upto";
  private static final String ROLL_DELIVERY = "SELECT stats_roll_delivery($1, $2) AS n";
  /** Hours rolled by delivery state per transaction. */
  static final int DELIVERY_HOURS_PER_STATEMENT = 24;
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
            return delivery(null, closed, r.maxHours()).map(d -> new RolledUp(prunedHours, folds.size(), 0, d));
          }
          return pool.preparedQuery(TODO).execute(Tuple.of(lo.truncatedTo(ChronoUnit.HOURS), closed, r.maxHours()))
              .compose(todo -> {
                List<OffsetDateTime> hours = new ArrayList<>();
                todo.forEach(row -> hours.add(row.getOffsetDateTime("h")));
                return rollEach(hours).compose(x -> delivery(lo, closed, r.maxHours()))
                    .map(d -> new RolledUp(prunedHours, folds.size(), hours.size(), d));
              });
        });
      });
    });
  }

  /**
   * The delivery roll-up moved to the facts committed now (docs/data-model.md §5.29): the barrier, then the recipients
   * with newer facts re-counted and the closed hours from {@code lo} (null: none) rolled, newest first, a day's worth a
   * transaction. Answers the hours rolled.
   */
  private Future<Integer> delivery(OffsetDateTime lo, OffsetDateTime closed, int maxHours) {
    return pool.query(BARRIER).execute().compose(b -> {
      long upto = b.iterator().next().getLong("upto");
      Future<List<OffsetDateTime>> todo = lo == null ? Future.succeededFuture(List.of())
          : pool.preparedQuery(DELIVERY_TODO).execute(Tuple.of(lo.truncatedTo(ChronoUnit.HOURS), closed, maxHours)).map(rows -> {
            List<OffsetDateTime> hours = new ArrayList<>();
            rows.forEach(row -> hours.add(row.getOffsetDateTime("h")));
            return hours;
          });
      return todo.compose(hours -> {
        // The first statement moves the mark (and re-counts), even with no hour to roll; the others roll at the same mark.
        Future<Integer> chain = Future.succeededFuture(0);
        int i = 0;
        do {
          OffsetDateTime[] part = hours.subList(i, Math.min(hours.size(), i + DELIVERY_HOURS_PER_STATEMENT))
              .toArray(new OffsetDateTime[0]);
          chain = chain.compose(n -> pool.preparedQuery(ROLL_DELIVERY).execute(Tuple.tuple().addValue(upto).addValue(part))
              .map(rows -> n + rows.iterator().next().getLong("n").intValue()));
          i += DELIVERY_HOURS_PER_STATEMENT;
        } while (i < hours.size());
        return chain;
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
