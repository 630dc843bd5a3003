package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The suppression list fed by hard bounces (docs/design.md §8.8): a tracking fact {@code bounced} of one of
 * {@code suppression.bounceCategories} (default {@code invalid_recipient}) adds its recipient, in the transaction that
 * records the fact, with its {@code suppression.added} event in the same statement. One bounce suffices: unlike a
 * smarthost's refusal at RCPT (one answer of one attempt, counted against {@code suppression.refusalThreshold}), a
 * bounce is the smarthost's final verdict on the recipient, and the category says it is the address itself that
 * failed. Scope: the user's ({@code user:<name>}) when the row had an AUTH or send key user, else {@code global}, as
 * the refusals' feed. Source {@code bounce}, the ledger row and the reply of the fact, added by {@code bounces
 * (<source>)}; a reason naming the category, the DSN code and the remote host. An address already held in that scope
 * is not added again (a second source reporting the same bounce, a DSN after the log, adds nothing and no event); an
 * entry past its expiry is renewed. Expiry: {@code suppression.categoryTtl} of the category, else
 * {@code suppression.ttl}, by the gateway's clock.
 */
public final class BounceFeed {
  /** The facts' bounced recipients of a listed category, one per scope and address (the newest fact names it). */
  private static final String ADD = """
      WITH b AS (
        SELECT DISTINCT ON (x.scope, x.address) x.*, c.expires_at
          FROM (SELECT f.id AS fact, f.message_id, f.category, f.dsn, f.remote_host, f.reply, f.source,
                       CASE WHEN m.auth_user IS NULL THEN 'global' ELSE 'user:' || m.auth_user END AS scope,
                       CASE WHEN position('@' in r.address) = 0 THEN btrim(r.address)
                            ELSE substring(btrim(r.address) from '^(.*@)') || lower(substring(btrim(r.address) from '@([^@]*)$'))
                       END AS address
                  FROM delivery_facts f
                  JOIN recipients r ON r.message_id = f.message_id AND r.idx = f.idx
                  JOIN messages m ON m.id = f.message_id
                 WHERE f.id = ANY($1) AND f.state = 'bounced') x
          JOIN unnest($2::text[], $3::timestamptz[]) AS c(category, expires_at) ON c.category = x.category
         ORDER BY x.scope, x.address, x.fact DESC),
      s AS (
        INSERT INTO suppressions (address, scope, reason, category, source, message_id, reply, added_by, expires_at)
        SELECT address, scope,
               'bounced (' || category || coalesce(', ' || dsn, '') || ')' || coalesce(' by ' || remote_host, ''),
               category, 'bounce', message_id, reply, 'bounces (' || source || ')', expires_at
          FROM b
        ON CONFLICT (scope, address) DO UPDATE SET reason = EXCLUDED.reason, category = EXCLUDED.category,
          source = EXCLUDED.source, message_id = EXCLUDED.message_id, reply = EXCLUDED.reply, added_by = EXCLUDED.added_by,
          added_at = now(), expires_at = EXCLUDED.expires_at
          WHERE suppressions.expires_at <= $4
        RETURNING %s),
      e AS (
        INSERT INTO outbox (event_id, message_id, type, payload)
        SELECT s.id::text || ':added:' || txid_current(), s.id, 'suppression.added', %s FROM s)
      SELECT * FROM s""".formatted(SuppressionStore.COLUMNS, SuppressionStore.PAYLOAD);

  private final Set<String> categories;
  private final GatewayConfig.Suppression config;
  private final Clock clock;

  public BounceFeed(GatewayConfig.Suppression config, Clock clock) {
    this.categories = Set.copyOf(config.bounceCategories());
    this.config = config;
    this.clock = clock;
  }

  /** Whether a fact of this state and category adds its recipient: the caller asks before it calls {@link #added}. */
  public boolean feeds(String state, String category) {
    return "bounced".equals(state) && category != null && categories.contains(category);
  }

  /**
   * Adds the recipients of the facts {@code factIds} (recorded on {@code c}, in its transaction) that {@link #feeds};
   * answers the entries added or renewed. Their events are written by the same statement; the caller's commit makes
   * them, and the nodes' copies see them at their next refresh (the version trigger).
   */
  public Future<List<Entry>> added(SqlConnection c, List<Long> factIds) {
    if (factIds.isEmpty() || categories.isEmpty()) {
      return Future.succeededFuture(List.of());
    }
    OffsetDateTime now = OffsetDateTime.now(clock);
    String[] names = categories.toArray(new String[0]);
    OffsetDateTime[] expires = new OffsetDateTime[names.length];
    for (int i = 0; i < names.length; i++) {
      expires[i] = now.plus(config.ttlOf(names[i]));
    }
    Tuple t = Tuple.tuple().addValue(factIds.toArray(new Long[0])).addValue(names).addValue(expires).addValue(now);
    return c.preparedQuery(ADD).execute(t).map(rows -> {
      List<Entry> out = new ArrayList<>();
      for (Row r : rows) {
        out.add(SuppressionStore.entry(r));
      }
      return List.copyOf(out);
    });
  }

  /** After the commit: each entry's audit line, as an operator's entry has. */
  public static void audit(List<Entry> entries) {
    for (Entry e : entries) {
      AuditLog.of(AuditEvent.SUPPRESSION_ADDED).with("suppression", e.id()).with("scope", e.scope())
          .with("source", e.source()).with("added_by", e.addedBy()).log();
    }
  }
}
