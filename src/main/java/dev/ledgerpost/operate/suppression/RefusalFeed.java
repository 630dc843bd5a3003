package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.RefusalMessages.Refusal;
import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The suppression list fed by the smarthost's refusals (docs/design.md §8.8): after a batch of refusals is recorded,
 * each address the smarthost refused with a 5.1.x reply is counted in {@code recipient_refusals} (so the count holds
 * across nodes) within {@code suppression.refusalWindow} before that refusal; at {@code suppression.refusalThreshold}
 * it is added to the list, source {@code refusal}, category {@code invalid_recipient}, naming the reply, the ledger row
 * (a DATA refusal's) and, in its reason, the refusal's record. Scope: the user's ({@code user:<name>}) when the mail had
 * an SMTP AUTH user, counting that user's refusals only (a tenant's bad list is its own); else {@code global}, counting
 * the unauthenticated relay clients' refusals. An address already held in that scope is not added again. On the part's
 * context; a failure is logged and the next refusal of the address counts again.
 */
final class RefusalFeed {
  private static final Logger LOG = LoggerFactory.getLogger(RefusalFeed.class);
  static final String CATEGORY = "invalid_recipient";
  static final String ADDED_BY = "smarthost refusals";
  private static final String COUNT = """
      SELECT count(*) AS n FROM recipient_refusals
       WHERE recipient = $1 AND user_name IS NOT DISTINCT FROM $2 AND source = 'smarthost' AND status LIKE '5.1.%'
         AND at > $3 AND at <= $4""";

  private final Pool pool;
  private final GatewayConfig.Suppression config;
  private final Suppressions list;
  private final SuppressionStore store;

  RefusalFeed(Pool pool, GatewayConfig.Suppression config, Suppressions list, SuppressionStore store) {
    this.pool = pool;
    this.config = config;
    this.list = list;
    this.store = store;
  }

  /**
   * A batch is in the table; {@code ids} are its rows' ids, in its order. The writer waits for this before its next
   * batch, so that an address's refusals are counted in the order they were given. Never fails.
   */
  Future<Void> recorded(List<Refusal> batch, List<UUID> ids) {
    Future<Void> done = Future.succeededFuture();
    if (config.refusalThreshold() <= 0) {
      return done;
    }
    Set<String> seen = new HashSet<>();
    for (int i = batch.size() - 1; i >= 0; i--) { // the latest refusal of an address names the entry
      Refusal r = batch.get(i);
      String scope = r.user() == null ? Suppressions.GLOBAL : Suppressions.scopeOf(r.user());
      String address = Suppressions.normalise(r.recipient());
      if (r.badMailbox() && seen.add(Suppressions.key(scope, address)) && !list.holds(scope, address)) {
        UUID id = ids.get(i);
        done = done.compose(v -> count(r, address, scope, id));
      }
    }
    return done;
  }

  private Future<Void> count(Refusal r, String address, String scope, UUID id) {
    Duration window = config.refusalWindow();
    Tuple t = Tuple.of(address, r.user(), r.at().minus(window), r.at());
    return pool.preparedQuery(COUNT).execute(t).compose(rows -> {
      long n = rows.iterator().next().getLong("n");
      if (n < config.refusalThreshold()) {
        return Future.succeededFuture();
      }
      String reason = "refused by the smarthost " + n + (n == 1 ? " time" : " times") + " within " + human(window)
          + " (refusal " + id + ")";
      return store.add(new SuppressionMessages.Add(address, scope, reason, CATEGORY, SuppressionMessages.Source.REFUSAL,
          r.messageId(), r.reply(), ADDED_BY, null)).mapEmpty();
    }).<Void>mapEmpty().recover(e -> {
      LOG.warn("suppression feed: refusal {} not counted ({}); the next refusal of the address counts it", id, e.getMessage());
      return Future.succeededFuture();
    });
  }

  /** 24h, 7d, 90m, 30s: how the config says it (a day as 24h, its default). */
  static String human(Duration d) {
    long s = d.getSeconds();
    if (s % 86_400 == 0 && s > 86_400) {
      return s / 86_400 + "d";
    }
    if (s % 3_600 == 0) {
      return s / 3_600 + "h";
    }
    return s % 60 == 0 ? s / 60 + "m" : s + "s";
  }
}
