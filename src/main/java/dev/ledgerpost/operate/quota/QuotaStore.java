package dev.ledgerpost.operate.quota;

import dev.ledgerpost.ledger.QuotaCounting;
import dev.ledgerpost.operate.quota.QuotaMessages.Usage;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageList;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageQuery;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * The quota part's statements over {@code quota_usage} (V105, docs/data-model.md §5.21). It only reads and prunes: the
 * counting is the ledger's open statement's own (ledger.OpenBatch's CTE), so that it costs no commit of its own.
 */
final class QuotaStore {
  private static final String COLUMNS = "user_name, hour_start, hour_used, hour_refused, day_start, day_used, day_refused";
  /** Today's rows (by the gateway's clock): every user that sent today. One statement, read through the day index. */
  private static final String TODAY = "SELECT " + COLUMNS + " FROM quota_usage WHERE day_start >= $1 ORDER BY user_name";
  private static final String ONE = "SELECT " + COLUMNS + " FROM quota_usage WHERE user_name = $1";
  /** Rows of a day before yesterday: nothing reads them any more. Small: one row per user that sent that day. */
  private static final String PRUNE = "DELETE FROM quota_usage WHERE day_start < $1";

  private final Pool pool;

  QuotaStore(Pool pool) {
    this.pool = pool;
  }

  /** Today's rows, {@code now} by the gateway's clock. */
  Future<List<Usage>> today(Instant now) {
    return pool.preparedQuery(TODAY).execute(Tuple.of(at(QuotaCounting.dayStart(now)))).map(QuotaStore::rows);
  }

  Future<UsageList> usage(UsageQuery q, Instant now) {
    Future<List<Usage>> rows = q.user() == null ? today(now)
        : pool.preparedQuery(ONE).execute(Tuple.of(q.user())).map(QuotaStore::rows);
    return rows.map(UsageList::new);
  }

  /** Deletes the rows of days that ended more than a day before {@code now}; how many. */
  Future<Integer> prune(Instant now) {
    Instant before = QuotaCounting.dayStart(now).minus(Duration.ofDays(1));
    return pool.preparedQuery(PRUNE).execute(Tuple.of(at(before))).map(r -> r.rowCount());
  }

  private static List<Usage> rows(Iterable<Row> rows) {
    List<Usage> out = new ArrayList<>();
    for (Row r : rows) {
      out.add(new Usage(r.getString("user_name"), r.getOffsetDateTime("hour_start").toInstant(), r.getInteger("hour_used"),
          r.getInteger("hour_refused"), r.getOffsetDateTime("day_start").toInstant(), r.getInteger("day_used"),
          r.getInteger("day_refused")));
    }
    return out;
  }

  private static OffsetDateTime at(Instant i) {
    return OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
  }
}
