package dev.ledgerpost.operate.quota;

import dev.ledgerpost.operate.quota.QuotaMessages.Usage;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageList;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageQuery;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.AdminOrSendKey;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code GET /api/v1/tenants} (the admin token: every user with an entry in the tenants file or a counter today) and
 * {@code GET /api/v1/tenants/{user}} (the admin token, or a send API key for its own user): each user's usage against
 * each quota and when each window resets (docs/design.md §8.9 "Quotas"). The counts are read from the ledger at the
 * request, not from this node's copy: what every node sees.
 */
record QuotaApi(Bus bus, QuotaGate gate) {
  void mount(Router router, EventTokens tokens, ApiKeys keys, ContractValidation contract) {
    router.get("/api/v1/tenants").handler(AdminOrSendKey.handler(tokens, keys)).handler(contract::handle).handler(this::list);
    router.get("/api/v1/tenants/:user").handler(AdminOrSendKey.handler(tokens, keys)).handler(contract::handle)
        .handler(this::one);
  }


  private void list(RoutingContext ctx) {
    if (AdminOrSendKey.user(ctx) != null) {
      Problem.send(ctx, 403, "Forbidden", "the list of tenants is the admin token's; a send API key reads /api/v1/tenants/"
          + AdminOrSendKey.user(ctx));
      return;
    }
    Problem.answer(ctx, bus.request(QuotaMessages.USAGE, new UsageQuery(null), UsageList.class), rows -> {
      Instant now = gate.now();
      Map<String, Usage> byUser = new TreeMap<>();
      gate.table().users().keySet().forEach(u -> byUser.put(u, null));
      rows.rows().forEach(u -> byUser.put(u.user(), u));
      JsonArray users = new JsonArray();
      byUser.forEach((user, usage) -> users.add(json(user, usage, now)));
      return new JsonObject().put("users", users).put("at", now.toString());
    });
  }

  private void one(RoutingContext ctx) {
    String user = ctx.pathParam("user");
    String own = AdminOrSendKey.user(ctx);
    if (own != null && !own.equals(user)) {
      Problem.send(ctx, 403, "Forbidden", "a send API key reads the usage of its own user only (" + own + ")");
      return;
    }
    Problem.answer(ctx, bus.request(QuotaMessages.USAGE, new UsageQuery(user), UsageList.class),
        rows -> json(user, rows.rows().isEmpty() ? null : rows.rows().get(0), gate.now()));
  }

  /** One user's usage against each of its quotas, now; {@code usage} null: nothing counted yet. */
  private JsonObject json(String user, Usage usage, Instant now) {
    TenantPolicy p = gate.policy(user);
    Usage u = QuotaGate.current(usage != null ? usage
        : new Usage(user, Instant.EPOCH, 0, 0, Instant.EPOCH, 0, 0), now);
    JsonObject hour = window(p.messagesPerHour(), u.hourUsed(), u.hourRefused(), u.hourStart(), Duration.ofHours(1));
    JsonObject day = window(p.messagesPerDay(), u.dayUsed(), u.dayRefused(), u.dayStart(), Duration.ofDays(1));
    boolean limited = hour.getBoolean("limited") || day.getBoolean("limited");
    return new JsonObject().put("user", user).put("ownEntry", gate.table().users().containsKey(user)).put("limited", limited)
        .put("quotas", new JsonObject()
            .put("messagesPerHour", hour)
            .put("messagesPerDay", day)
            .put("recipientsPerMessage", new JsonObject().put("limit", p.recipientsPerMessage()))
            .put("messageSize", new JsonObject().put("limit", p.messageSize())));
  }

  /** A window's count against its limit (0: none); limited while it is used up (by the file's limit now: a raise frees). */
  private static JsonObject window(long limit, long used, long refused, Instant start, Duration length) {
    return new JsonObject().put("limit", limit).put("used", used)
        .put("remaining", limit == 0 ? null : Math.max(0, limit - used))
        .put("refused", refused)
        .put("windowStart", start.toString())
        .put("resetsAt", start.plus(length).toString())
        .put("limited", limit > 0 && used >= limit);
  }
}
