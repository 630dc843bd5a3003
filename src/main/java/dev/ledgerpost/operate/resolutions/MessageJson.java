package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.operate.tracking.TrackingMessages;
import dev.ledgerpost.operate.reconcile.ProposalJson;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.LedgerMessages.MessageSummary;
import dev.ledgerpost.ledger.LedgerMessages.RecipientView;
import dev.ledgerpost.ledger.LedgerMessages.ResolutionView;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.ledger.MessageStatus;
import java.util.List;
import java.util.UUID;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/** The API's JSON form of ledger views. Written by hand: the shape is the contract, not a side effect of field names. */
public final class MessageJson {
  private MessageJson() {}

  public static JsonObject page(MessagePage page) {
    JsonArray items = new JsonArray();
    page.items().forEach(s -> items.add(summary(s)));
    return new JsonObject().put("items", items).put("next", page.next());
  }

  /** A message as every answer names it: id, status and the version a conditional change quotes back. */
  public static JsonObject message(UUID id, MessageStatus status, int version) {
    return new JsonObject().put("id", id.toString()).put("status", status.name()).put("version", version);
  }

  public static JsonObject summary(MessageSummary s) {
    return message(s.id(), s.status(), s.version())
        .put("intake", s.intake().name())
        .put("mailFrom", s.mailFrom())
        .put("messageId", s.messageIdHeader())
        .put("size", s.size())
        .put("recipientCount", s.recipientCount())
        .put("firstRecipient", s.firstRecipient())
        .put("receivedAt", s.receivedAt() == null ? null : s.receivedAt().toString())
        .put("settledAt", s.settledAt() == null ? null : s.settledAt().toString())
        .put("tags", new JsonArray(new java.util.ArrayList<>(s.tags().tags())))
        .put("metadata", new JsonObject(new java.util.LinkedHashMap<>(s.tags().metadata())));
  }

  /**
   * The ledger's detail of a message with the reconcile part's proposals for it (newest first) and, per recipient, its
   * tracking facts in the order recorded (docs/design.md §8.13): what happened after the smarthost, beside its status.
   */
  public static JsonObject detail(MessageDetail d, List<ProposalView> proposalList, List<TrackingMessages.FactView> facts) {
    JsonArray recipients = new JsonArray();
    for (int i = 0; i < d.recipients().size(); i++) {
      RecipientView r = d.recipients().get(i);
      int idx = i;
      JsonArray delivery = new JsonArray();
      facts.stream().filter(f -> f.position() == idx).forEach(f -> delivery.add(new JsonObject()
          .put("state", f.state())
          .put("at", f.at().toString())
          .put("remoteHost", f.remoteHost())
          .put("dsn", f.dsn())
          .put("reply", f.reply())
          .put("category", f.category())
          .put("rule", f.rule())
          .put("source", f.source())
          .put("queueId", f.queueId())
          .put("evidence", f.evidence())));
      recipients.add(new JsonObject()
          .put("delivery", delivery)
          .put("address", r.address())
          .put("status", r.status().name())
          .put("rcptReply", r.rcptReply())
          .put("reply", reply(r))
          .put("replyCode", r.replyCode())
          .put("enhancedCode", r.enhancedCode())
          .put("dsnNotify", r.dsnNotify())
          .put("dsnOrcpt", r.dsnOrcpt()));
    }
    JsonArray proposals = new JsonArray();
    proposalList.forEach(p -> proposals.add(ProposalJson.of(p)));
    return summary(d.summary())
        .put("authUser", d.authUser())
        .put("clientIp", d.clientIp())
        .put("helo", d.helo())
        .put("sha256", d.sha256())
        .put("route", d.route())
        .put("node", d.node())
        .put("downstreamReply", d.downstreamReply())
        .put("lastError", d.lastError())
        .put("sentSha256", d.sentSha256())
        .put("recipients", recipients) // recipientList before openapi.yaml 0.2.0 (docs/contract.md §1.12)
        .put("resolution", resolution(d.resolution(), proposalList))
        .put("dsn", d.dsnRet() == null && d.dsnEnvid() == null ? null
            : new JsonObject().put("ret", d.dsnRet()).put("envid", d.dsnEnvid()))
        .put("proposals", proposals)
        .put("resubmissionOf", d.resubmissionOf() == null ? null : d.resubmissionOf().toString())
        .put("resubmissions", resubmissions(d.resubmissions()));
  }

  /** The retries answered from this row without relaying (docs/contract.md §1.13), oldest first. */
  public static JsonArray resubmissions(List<LedgerMessages.ResubmissionView> list) {
    JsonArray out = new JsonArray();
    for (LedgerMessages.ResubmissionView r : list) {
      out.add(new JsonObject()
          .put("at", r.at().toString())
          .put("outcome", r.outcome())
          .put("attemptId", r.attemptId().toString())
          .put("node", r.node())
          .put("clientIp", r.clientIp())
          .put("authUser", r.authUser())
          .put("helo", r.helo()));
    }
    return out;
  }

  /**
   * {@code {outcome, operator, note, at, proposal}}, or null when nobody resolved the message (docs/design.md §8.2);
   * {@code proposal} is the reconcile proposal the resolution accepted, with its evidence (§8.4), or null.
   */
  public static JsonObject resolution(ResolutionView r, List<ProposalView> proposals) {
    ProposalView accepted = r == null || r.proposalId() == null ? null
        : proposals.stream().filter(p -> p.id() == r.proposalId()).findFirst().orElse(null);
    return r == null ? null : new JsonObject()
        .put("outcome", r.outcome())
        .put("operator", r.operator())
        .put("note", r.note())
        .put("at", r.at() == null ? null : r.at().toString())
        .put("proposal", accepted == null ? null : ProposalJson.of(accepted));
  }

  /**
   * A recipient's final reply (to DATA, or the one a settle recorded), never its RCPT reply: null while there
   * is none (PENDING, UNKNOWN). The RCPT reply is shown beside it as {@code rcptReply}.
   */
  public static String reply(RecipientView r) {
    return r.replyCode() == null ? null : LedgerMessages.replyLine(r.replyCode(), r.enhancedCode(), r.replyText());
  }
}
