package dev.ledgerpost.operate.reconcile;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * One message as one evidence source saw it (docs/design.md §8.4): a Postfix queue id with its log lines, a downstream
 * Ledgerpost's row, or the answer the ledger stored for a row's Idempotency-Key. Fields a source does not know are
 * null (or empty): they neither match nor contradict.
 *
 * @param source the configured source's name
 * @param sourceType {@code postfix-log}, {@code ledgerpost} or {@code ledger}
 * @param ref what the source calls the message (a queue id, a downstream ledger id); one piece of evidence explains one row
 * @param verdict what the smarthost did with it
 * @param at when the source saw it
 * @param row the ledger row this evidence is about, when the source knows it for certain (the ledger's own facts)
 * @param messageIds every Message-ID the source saw on the message, in its order (a message may carry two headers, and
 *     Postfix logs both); empty when it saw none
 * @param recipients the recipients the source names; {@code allRecipients} when that is all of them
 * @param recipientCount how many recipients the source counted (Postfix's nrcpt), or null
 * @param sha256 the hash of the bytes the source received (a downstream Ledgerpost's body_sha256), or null
 * @param summary one line for operators: "queued as 80F7023416C; sent to b@example.net (250 2.0.0 Ok)"
 * @param lines the source's own record, as it wrote it (log lines, or the downstream's fields)
 */
record Sighting(String source, String sourceType, String ref, Verdict verdict, Instant at, UUID row, List<String> messageIds,
    String from, Set<String> recipients, boolean allRecipients, Integer recipientCount, String sha256, String summary,
    List<String> lines) {

  Sighting {
    messageIds = List.copyOf(messageIds);
  }

  /** With one Message-ID, or none (null). */
  Sighting(String source, String sourceType, String ref, Verdict verdict, Instant at, UUID row, String messageId,
      String from, Set<String> recipients, boolean allRecipients, Integer recipientCount, String sha256, String summary,
      List<String> lines) {
    this(source, sourceType, ref, verdict, at, row, messageId == null ? List.of() : List.of(messageId), from, recipients,
        allRecipients, recipientCount, sha256, summary, lines);
  }

  /**
   * What the smarthost did with the message: took it (queued, delivered, or 250 and discarded) or refused it; or
   * {@code NONE}: the message reached it (a queue id, a Message-ID) but was neither queued nor refused, as when the
   * connection was lost before the final dot. A {@code NONE} sighting is never a proposal's evidence; it is a rival
   * (docs/design.md §8.4): that attempt may be the row's own, so another copy's verdict cannot be exactly the row's.
   */
  enum Verdict { ACCEPTED, REJECTED, NONE }

  /** The first Message-ID the source saw, or null. */
  String messageId() {
    return messageIds.isEmpty() ? null : messageIds.get(0);
  }

  /** As the proposal's evidence keeps it. */
  JsonObject json() {
    JsonObject j = new JsonObject()
        .put("source", source)
        .put("type", sourceType)
        .put("ref", ref)
        .put("verdict", verdict.name())
        .put("at", at == null ? null : at.toString())
        .put("messageId", messageId())
        .put("from", from)
        .put("recipients", new JsonArray(List.copyOf(recipients)))
        .put("recipientCount", recipientCount)
        .put("sha256", sha256)
        .put("summary", summary)
        .put("lines", new JsonArray(List.copyOf(lines)));
    if (messageIds.size() > 1) {
      j.put("messageIds", new JsonArray(messageIds)); // every one the source saw, not only the first
    }
    return j;
  }
}
