package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Answer;
import dev.ledgerpost.operate.stats.StatsMessages.StatsQuery;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.AdminOrSendKey;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;

/**
 * {@code GET /api/v1/stats} (docs/design.md §8.12): counts of messages, recipients and bytes per bucket, as JSON or, with
 * {@code Accept: text/csv} or {@code format=csv}, as CSV. The admin token sees every user; a send API key its own user
 * only: the user filter is forced to it, and another user's is 403.
 */
record StatsApi(Bus bus, Clock clock) {
  void mount(Router router, EventTokens tokens, ApiKeys keys, ContractValidation contract) {
    router.route(HttpMethod.GET, "/api/v1/stats").handler(AdminOrSendKey.handler(tokens, keys))
        .handler(contract::handle).handler(this::stats);
  }


  private void stats(RoutingContext ctx) {
    Input in = Input.of(ctx);
    String own = AdminOrSendKey.user(ctx);
    String user = in.string("user");
    if (own != null && user != null && !user.isEmpty() && !user.equals(own)) {
      Problem.send(ctx, 403, "Forbidden", "a send API key sees the statistics of its own user only (" + own + ")");
      return;
    }
    StatsQuery q;
    try {
      q = StatsParameters.parse(in.string("since"), in.string("until"), in.string("bucket"), in.string("groupBy"),
          own != null ? own : user, clock);
    } catch (StatsParameters.Refused e) {
      Problem.send(ctx, e.status, e.status == 400 ? "Bad Request" : "Unprocessable Content", e.getMessage());
      return;
    }
    boolean csv = "csv".equals(in.string("format")) || ("json".equals(in.string("format")) ? false : acceptsCsv(ctx));
    StatsQuery query = q;
    bus.request(StatsMessages.QUERY, q, Answer.class).onComplete(ar -> {
      if (ar.failed()) {
        Problem.ledgerFailure(ctx, ar.cause());
      } else if (csv) {
        ctx.response().setStatusCode(200).putHeader("Content-Type", "text/csv; charset=utf-8")
            .putHeader("Content-Disposition", "attachment; filename=\"ledgerpost-stats.csv\"")
            .end(StatsCsv.of(query, ar.result()));
      } else {
        Problem.json(ctx, 200, json(query, ar.result()));
      }
    });
  }

  /** text/csv named in Accept before (or without) application/json. */
  private static boolean acceptsCsv(RoutingContext ctx) {
    String accept = ctx.request().getHeader("Accept");
    if (accept == null) {
      return false;
    }
    int csv = accept.indexOf("text/csv");
    int json = accept.indexOf("application/json");
    return csv >= 0 && (json < 0 || csv < json);
  }

  static JsonObject json(StatsQuery q, Answer a) {
    JsonArray groupBy = new JsonArray();
    q.groupBy().forEach(d -> groupBy.add(d.label()));
    JsonArray rows = new JsonArray();
    for (StatsMessages.Row r : a.rows()) {
      JsonObject row = new JsonObject().put("bucket", r.bucket().toString());
      for (int i = 0; i < q.groupBy().size(); i++) {
        row.put(q.groupBy().get(i).label(), r.keys().get(i));
      }
      rows.add(row.put("messages", r.messages()).put("recipients", r.recipients()).put("bytes", r.bytes())); // null by delivery
    }
    JsonObject out = new JsonObject().put("since", q.since().toString()).put("until", q.until().toString())
        .put("bucket", q.hours() == 1 ? "1h" : "1d").put("groupBy", groupBy);
    if (q.user() != null) {
      out.put("user", q.user());
    }
    return out.put("rows", rows);
  }
}
