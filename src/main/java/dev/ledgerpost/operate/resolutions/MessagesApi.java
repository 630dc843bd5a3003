package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.tracking.TrackingMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * {@code GET /api/v1/messages} and {@code /api/v1/messages/{id}}: the ledger's list and a message's detail with the
 * reconcile part's proposals for it, for operators and dashboards. Mounted after the routes under
 * {@code /messages/} that are no id ({@code /messages/stale}).
 */
public record MessagesApi(Bus bus) {
  public void mount(Router router) {
    router.get("/api/v1/messages").handler(this::list);
    router.get("/api/v1/messages/:id").handler(this::detail);
  }

  /** Status, limit and the rest are as the contract validated them; only the times are parsed here. */
  private void list(RoutingContext ctx) {
    Input in = Input.of(ctx);
    OffsetDateTime since;
    OffsetDateTime until;
    try {
      since = in.time("since", "2026-11-30T10:00:00Z");
      until = in.time("until", "2026-11-30T11:00:00Z");
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    String status = in.string("status");
    String sender = in.string("sender");
    String recipient = in.string("recipient");
    String messageId = in.string("messageId");
    String tag = in.string("tag");
    ListQuery query = new ListQuery(status == null ? null : MessageStatus.valueOf(status),
        sender == null || sender.isEmpty() ? null : sender, recipient == null || recipient.isEmpty() ? null : recipient, since,
        until, in.number("limit").intValue(), in.string("cursor"), messageId == null || messageId.isEmpty() ? null : messageId,
        tag == null || tag.isEmpty() ? null : tag, in.string("delivery"), in.string("category"));
    Problem.answer(ctx, bus.request(LedgerMessages.LIST, query, MessagePage.class), MessageJson::page);
  }

  private void detail(RoutingContext ctx) {
    UUID id = UUID.fromString(Input.of(ctx).path("id"));
    Future<MessageDetail> detail = bus.request(LedgerMessages.GET, new Get(id), MessageDetail.class);
    Problem.answer(ctx, detail.compose(d -> proposals(bus, id).compose(p -> facts(bus, id).map(f -> MessageJson.detail(d, p, f)))),
        json -> json);
  }

  /** What happened to the message's recipients after the smarthost, in the order recorded (docs/design.md §8.13). */
  public static Future<List<TrackingMessages.FactView>> facts(Bus bus, UUID id) {
    return bus.request(TrackingMessages.OF_MESSAGE, new TrackingMessages.OfMessage(id), TrackingMessages.Facts.class)
        .map(TrackingMessages.Facts::items);
  }

  /** The reconcile proposals of one message, newest first (docs/design.md §8.4). */
  public static Future<List<ProposalView>> proposals(Bus bus, UUID id) {
    return bus.request(ReconcileMessages.OF_MESSAGE, new ReconcileMessages.OfMessage(id), ReconcileMessages.Proposals.class)
        .map(ReconcileMessages.Proposals::items);
  }
}
