package dev.ledgerpost.intake.http;

import dev.ledgerpost.operate.resolutions.MessageJson;
import dev.ledgerpost.operate.reconcile.ProposalJson;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.RecipientView;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.resolutions.OperatorMessages.OperationFacts;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ReceiptView;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;

/** GET /api/v1/operations/{id}: what is known of one submission, fact by fact (docs/contract.md §1.11). */
public final class OperationJson {
  private OperationJson() {}

  public static JsonObject of(OperationFacts facts, List<ProposalView> proposalList, Boolean retrying, List<String> retryingOn, int attempted) {
    MessageDetail d = facts.message();
    JsonArray recipients = new JsonArray();
    for (RecipientView r : d.recipients()) {
      // Both replies, named as the message detail names them: an RCPT "250" is not a delivery (UNKNOWN has no final reply).
      recipients.add(new JsonObject().put("address", r.address()).put("status", r.status().name())
          .put("rcptReply", r.rcptReply()).put("reply", MessageJson.reply(r)));
    }
    JsonArray receipts = new JsonArray();
    for (ReceiptView r : facts.receipts()) {
      receipts.add(new JsonObject().put("subscriber", r.subscriber()).put("state", r.state()).put("seq", r.pubSeq())
          .put("at", r.at().toString()));
    }
    JsonArray proposals = new JsonArray();
    proposalList.forEach(p -> proposals.add(ProposalJson.of(p)));
    boolean allPublished = facts.events() > 0 && facts.publishedEvents() == facts.events();
    return new JsonObject()
        .put("id", d.summary().id().toString())
        .put("message", new JsonObject()
            .put("state", "STORED")
            .put("status", d.summary().status().name())
            .put("version", d.summary().version())
            .put("route", d.route())
            .put("node", d.node())
            .put("downstreamReply", d.downstreamReply())
            .put("resolution", MessageJson.resolution(d.resolution(), proposalList))
            .put("proposals", proposals)
            .put("resubmissionOf", d.resubmissionOf() == null ? null : d.resubmissionOf().toString())
            .put("resubmissions", MessageJson.resubmissions(d.resubmissions()))
            .put("waiting", waiting(d)))
        .put("recipients", recipients)
        .put("ledger", new JsonObject()
            .put("settled", d.summary().status() != MessageStatus.PENDING)
            .put("retrying", retrying)
            .put("retryingOn", new JsonArray(retryingOn)))
        .put("publish", new JsonObject()
            .put("state", allPublished ? "PUBLISHED" : "PENDING")
            .put("events", facts.events())
            .put("published", facts.publishedEvents())
            .put("lastSeq", facts.lastPubSeq()))
        .put("notify", new JsonObject().put("attempted", attempted).put("receipts", receipts))
        .put("readSource", "primary")
        .put("asOf", OffsetDateTime.now(ZoneOffset.UTC).toString());
  }

  /**
   * Why a client's retry of this message was held (docs/contract.md §1.13), while the row still decides it: null when no
   * retry was held, or once the row is settled either way (the next retry is answered from the new status).
   */
  static String waiting(MessageDetail d) {
    MessageStatus status = d.summary().status();
    if (status != MessageStatus.UNKNOWN && status != MessageStatus.PENDING) {
      return null;
    }
    List<LedgerMessages.ResubmissionView> held = d.resubmissions().stream().filter(r -> r.outcome().equals("held")).toList();
    if (held.isEmpty()) {
      return null;
    }
    LedgerMessages.ResubmissionView last = held.get(held.size() - 1);
    return held.size() + " client retr" + (held.size() == 1 ? "y" : "ies") + " of this message (the last at " + last.at()
        + " from " + last.clientIp() + ") heard 451 4.4.2 and nothing was sent: nobody knows whether the smarthost got it. "
        + "Resolve the row: DELIVERED, and the next retry hears 250 already relayed; NOT_DELIVERED, and it is relayed once "
        + "as new mail.";
  }
}
