package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Answer;
import dev.ledgerpost.operate.stats.StatsMessages.Dimension;
import dev.ledgerpost.operate.stats.StatsMessages.StatsQuery;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The statistics query (docs/design.md §8.12): one statement, so one snapshot, that adds disjoint sets of rows of
 * the range's hours: the roll-up of the rolled hours' closed rows ({@code stats_days} for whole rolled days when the
 * bucket is a day, else {@code stats_hours}), those hours' rows that were
 * open when rolled (read live by id from {@code messages}: their status may have changed since), and every row of the
 * hours not rolled (read live, an hour's id range at a time). A rolled hour below the oldest ledger row (dropped by
 * retention, not yet pruned by the job) counts as not rolled, and so as what the ledger holds there: nothing.
 */
final class StatsQueries {
  private static final String TEMPLATE = """
      WITH lo AS (SELECT coalesce((SELECT ledger_id_hour(id) FROM messages ORDER BY id LIMIT 1), 'infinity') AS h),
      days AS (
        SELECT d.day FROM stats_days_rolled d
         WHERE %6$s AND d.day >= $1 AND d.day < $2 AND d.day >= (SELECT h FROM lo)),
      rolled AS (
        SELECT r.hour, to_timestamp(floor(extract(epoch FROM r.hour) / 86400) * 86400) IN (SELECT day FROM days) AS in_day
          FROM stats_rolled r WHERE r.hour >= $1 AND r.hour < $2 AND r.hour >= (SELECT h FROM lo)),
      live AS (
        SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
         WHERE NOT EXISTS (SELECT 1 FROM rolled WHERE rolled.hour = g.h)),
      facts AS (
        SELECT d.day AS h, d.auth_user, d.status, %7$s d.messages, d.recipients, d.bytes
          FROM stats_days d
         WHERE d.day >= $1 AND d.day < $2 AND d.day IN (SELECT day FROM days) AND ($3::text IS NULL OR d.auth_user = $3)
        UNION ALL
        SELECT s.hour, s.auth_user, s.status, %1$s s.messages, s.recipients, s.bytes
          FROM %2$s s
         WHERE s.hour >= $1 AND s.hour < $2 AND s.hour IN (SELECT hour FROM rolled WHERE NOT in_day)
           AND ($3::text IS NULL OR s.auth_user = $3)
        UNION ALL
        SELECT p.hour, m.auth_user, m.status, %3$s 1, (SELECT count(*) FROM recipients r WHERE r.message_id = m.id), m.size_bytes
          FROM stats_open p JOIN messages m ON m.id = p.id %4$s
         WHERE p.hour >= $1 AND p.hour < $2 AND p.hour IN (SELECT hour FROM rolled) AND ($3::text IS NULL OR m.auth_user = $3)
        UNION ALL
        SELECT l.h, m.auth_user, m.status, %3$s 1, (SELECT count(*) FROM recipients r WHERE r.message_id = m.id), m.size_bytes
          FROM live l
          JOIN LATERAL (SELECT * FROM messages m
                         WHERE m.id >= ledger_id_lowest(l.h) AND m.id < ledger_id_lowest(l.h + interval '1 hour')) m ON true %4$s
         WHERE ($3::text IS NULL OR m.auth_user = $3))
      SELECT to_timestamp(floor(extract(epoch FROM h) / $4) * $4) AS bucket%5$s,
             sum(messages)::bigint AS messages, sum(recipients)::bigint AS recipients, sum(bytes)::bigint AS bytes
        FROM facts GROUP BY 1%5$s ORDER BY 1%5$s""";

  /**
   * The recipients by delivery state and category (docs/data-model.md §5.29), one statement: the rolled hours' rows
   * ({@code stats_delivery_hours}, exact as of the facts up to the mark), plus, for the recipients of rolled hours with a
   * fact above the mark, their state now less their state as of the mark, plus every recipient with a fact in the hours
   * not rolled (read live, an hour's id range of the facts' index at a time). A recipient's state is its last final fact
   * (delivered, bounced, expired) by time, else its last deferral (delivery_rank, then at, then id: the roll-up's order).
   * %1$s: the keys (", auth_user", ", delivery", ", category").
   */
  private static final String DELIVERY_TEMPLATE = """
      WITH lo AS (SELECT coalesce((SELECT ledger_id_hour(id) FROM messages ORDER BY id LIMIT 1), 'infinity') AS h),
      mark AS (SELECT coalesce((SELECT fact_id FROM stats_delivery_mark), 0) AS m),
      rolled AS (
        SELECT r.hour FROM stats_delivery_rolled r WHERE r.hour >= $1 AND r.hour < $2 AND r.hour >= (SELECT h FROM lo)),
      live AS (
        SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
         WHERE NOT EXISTS (SELECT 1 FROM rolled WHERE rolled.hour = g.h)),
      touched AS (
        SELECT DISTINCT f.message_id, f.idx FROM delivery_facts f
         WHERE f.id > (SELECT m FROM mark) AND f.message_id >= ledger_id_lowest($1) AND f.message_id < ledger_id_lowest($2)
           AND ledger_id_hour(f.message_id) IN (SELECT hour FROM rolled)),
      states AS (
        SELECT s.hour AS h, s.auth_user, s.delivery, s.category, s.recipients AS n
          FROM stats_delivery_hours s
         WHERE s.hour >= $1 AND s.hour < $2 AND s.hour IN (SELECT hour FROM rolled) AND ($3::text IS NULL OR s.auth_user = $3)
        UNION ALL
        SELECT ledger_id_hour(t.message_id), m.auth_user, x.state, x.category, x.n
          FROM touched t JOIN messages m ON m.id = t.message_id
          CROSS JOIN LATERAL (
            (SELECT f.state, f.category, -1 AS n FROM delivery_facts f
              WHERE f.message_id = t.message_id AND f.idx = t.idx AND f.id <= (SELECT m FROM mark)
              ORDER BY delivery_rank(f.state), f.at DESC, f.id DESC LIMIT 1)
            UNION ALL
            (SELECT f.state, f.category, 1 AS n FROM delivery_facts f WHERE f.message_id = t.message_id AND f.idx = t.idx
              ORDER BY delivery_rank(f.state), f.at DESC, f.id DESC LIMIT 1)) x
         WHERE ($3::text IS NULL OR m.auth_user = $3)
        UNION ALL
        SELECT l.h, m.auth_user, x.state, x.category, 1
          FROM live l
          JOIN LATERAL (SELECT DISTINCT ON (f.message_id, f.idx) f.message_id, f.state, f.category FROM delivery_facts f
                         WHERE f.message_id >= ledger_id_lowest(l.h) AND f.message_id < ledger_id_lowest(l.h + interval '1 hour')
                         ORDER BY f.message_id, f.idx, delivery_rank(f.state), f.at DESC, f.id DESC) x ON true
          JOIN messages m ON m.id = x.message_id
         WHERE ($3::text IS NULL OR m.auth_user = $3))
      SELECT to_timestamp(floor(extract(epoch FROM h) / $4) * $4) AS bucket%1$s, sum(n)::bigint AS recipients
        FROM states GROUP BY 1%1$s HAVING sum(n) <> 0 ORDER BY 1%1$s""";

  private final Pool pool;

  StatsQueries(Pool pool) {
    this.pool = pool;
  }

  /** The statement for {@code groupBy}: fixed fragments only, no value of the request in its text. */
  static String sql(List<Dimension> groupBy) {
    if (groupBy.contains(Dimension.DELIVERY) || groupBy.contains(Dimension.CATEGORY)) {
      return DELIVERY_TEMPLATE.formatted(groupBy.stream().map(d -> ", " + column(d)).collect(Collectors.joining()));
    }
    boolean tags = groupBy.contains(Dimension.TAG);
    String keys = groupBy.stream().map(d -> ", " + column(d)).collect(Collectors.joining());
    // The day sums have no tags: a query by tag reads hours only ("false": no day is taken from stats_days). A message
    // counts once per tag it carries (unnest), and not at all under groupBy=tag when it has none.
    return TEMPLATE.formatted(tags ? "s.tag," : "", tags ? "stats_hour_tags" : "stats_hours", tags ? "t.tag," : "",
        tags ? "CROSS JOIN LATERAL unnest(m.tags) AS t(tag)" : "", keys, tags ? "false" : "$4 = 86400",
        tags ? "NULL::text AS tag," : "");
  }

  private static String column(Dimension d) {
    return switch (d) {
      case STATUS -> "status";
      case USER -> "auth_user";
      case TAG -> "tag";
      case DELIVERY -> "delivery";
      case CATEGORY -> "category";
    };
  }

  Future<Answer> run(StatsQuery q) {
    Tuple params = Tuple.of(OffsetDateTime.ofInstant(q.since(), ZoneOffset.UTC), OffsetDateTime.ofInstant(q.until(), ZoneOffset.UTC),
        q.user(), q.hours() * 3600);
    return pool.preparedQuery(sql(q.groupBy())).execute(params).map(rows -> {
      List<StatsMessages.Row> out = new ArrayList<>();
      for (Row r : rows) {
        List<String> keys = new ArrayList<>();
        for (Dimension d : q.groupBy()) {
          keys.add(r.getString(column(d)));
        }
        out.add(q.byDelivery()
            ? new StatsMessages.Row(r.getOffsetDateTime("bucket").toInstant(), keys, null, r.getLong("recipients"), null)
            : new StatsMessages.Row(r.getOffsetDateTime("bucket").toInstant(), keys, r.getLong("messages"),
                r.getLong("recipients"), r.getLong("bytes")));
      }
      return new Answer(out);
    });
  }
}
