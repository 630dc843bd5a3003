package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.operate.resolutions.MessageJson;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRow;
import dev.ledgerpost.operate.stale.PendingHistory;
import dev.ledgerpost.operate.stale.StaleGauges;
import dev.ledgerpost.operate.stale.StaleMessages;
import dev.ledgerpost.operate.stale.StaleMessages.Attention;
import dev.ledgerpost.operate.stale.StaleMessages.AttentionQuery;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/**
 * What needs an operator (docs/design.md §8.3): the stale PENDING and the UNKNOWN messages, oldest first, with the
 * stale watch's gauges as /metrics shows them, and the gauges' last hour. The console's "needs attention" page,
 * its header badge and its chart read these; a bulk resolution resolves what this lists for the same filter.
 */
public final class AttentionApi {

  private final Bus bus;
  private final OperatorViews views;

  public AttentionApi(Bus bus, OperatorViews views) {
    this.bus = bus;
    this.views = views;
  }

  public void mount(Router router) {
    router.get("/api/v1/attention").handler(this::attention);
    router.get("/api/v1/attention/history").handler(this::history);
  }

  private void attention(RoutingContext ctx) {
    AttentionQuery query;
    try {
      Input in = Input.of(ctx);
      query = query(in.string("status"), in.string("sender"), in.string("since"), in.string("until"),
          in.number("limit").intValue());
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    bus.request(StaleMessages.ATTENTION, query, Attention.class).onComplete(ar -> {
      if (ar.failed()) {
        Problem.ledgerFailure(ctx, ar.cause());
        return;
      }
      Attention a = ar.result();
      JsonArray items = new JsonArray();
      a.rows().forEach(r -> items.add(item(r, a.asOf())));
      Problem.json(ctx, 200, new JsonObject()
          .put("asOf", a.asOf().toString())
          .put("thresholdSeconds", a.threshold().toSeconds())
          .put("gauges", gauges(views.gauges()))
          .put("matching", a.matching())
          .put("items", items));
    });
  }

  private void history(RoutingContext ctx) {
    JsonArray samples = new JsonArray();
    for (PendingHistory.Sample s : views.pendingHistory().samples()) {
      samples.add(new JsonObject()
          .put("at", s.at().toString())
          .put("pending", s.pending())
          .put("oldestPendingAgeSeconds", s.oldestPendingAgeSeconds())
          .put("stale", s.stale())
          .put("unknown", s.unknown()));
    }
    Problem.json(ctx, 200, new JsonObject()
        .put("intervalSeconds", PendingHistory.INTERVAL.toSeconds())
        .put("windowSeconds", PendingHistory.WINDOW.toSeconds())
        .put("gauges", gauges(views.gauges()))
        .put("samples", samples));
  }

  /** The values /metrics reports as ledgerpost_pending_* and ledgerpost_unknown_messages, read the same way. */
  static JsonObject gauges(StaleGauges g) {
    return new JsonObject()
        .put("pending", g.pendingMessages())
        .put("oldestPendingAgeSeconds", g.oldestPendingAgeSeconds())
        .put("stale", g.stalePendingMessages())
        .put("unknown", g.unknownMessages());
  }

  static JsonObject item(OpenRow r, OffsetDateTime asOf) {
    return MessageJson.message(r.id(), r.status(), r.version())
        .put("messageId", r.messageIdHeader())
        .put("mailFrom", r.mailFrom())
        .put("receivedAt", r.receivedAt().toString())
        .put("ageSeconds", Math.max(0, Duration.between(r.receivedAt(), asOf).toSeconds()))
        .put("staleRaises", r.staleRaises())
        .put("lastRaisedAt", r.lastRaisedAt() == null ? null : r.lastRaisedAt().toString())
        .put("clientsWaiting", r.clientsWaiting());
  }

  /** The filter shared with bulk resolution: status PENDING or UNKNOWN (or both when absent), sender, time range. */
  static AttentionQuery query(String status, String sender, String since, String until, int limit) {
    MessageStatus s = null;
    if (status != null && !status.isEmpty()) {
      s = switch (status.toUpperCase(Locale.ROOT)) {
        case "PENDING" -> MessageStatus.PENDING;
        case "UNKNOWN" -> MessageStatus.UNKNOWN;
        default -> throw new IllegalArgumentException("status must be PENDING or UNKNOWN: only those wait for an operator");
      };
    }
    OffsetDateTime from = Input.parseTime("since", since);
    OffsetDateTime to = Input.parseTime("until", until);
    if (from != null && to != null && !from.isBefore(to)) {
      throw new IllegalArgumentException("since must be before until");
    }
    return new AttentionQuery(s, sender == null || sender.isEmpty() ? null : sender, from, to, limit);
  }
}
