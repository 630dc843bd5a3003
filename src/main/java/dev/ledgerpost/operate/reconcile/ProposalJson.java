package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import io.vertx.core.json.JsonObject;

/** A reconcile proposal as the API shows it: in the proposals' list, in a message's detail and in an operation's status. */
public final class ProposalJson {
  private ProposalJson() {}

  public static JsonObject of(ProposalView p) {
    return new JsonObject()
        .put("id", p.id())
        .put("message", p.messageId().toString())
        .put("messageVersion", p.messageVersion())
        .put("outcome", p.outcome().name())
        .put("confidence", p.confidence().label())
        .put("source", p.source())
        .put("evidenceRef", p.evidenceRef())
        .put("evidence", p.evidence())
        .put("state", p.state().name())
        .put("proposedAt", p.proposedAt().toString())
        .put("proposedBy", p.proposedBy())
        .put("decidedAt", p.decidedAt() == null ? null : p.decidedAt().toString())
        .put("decidedBy", p.decidedBy())
        .put("decisionNote", p.decisionNote());
  }
}
