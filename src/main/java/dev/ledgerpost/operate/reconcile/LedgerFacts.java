package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * The ledger's own facts (docs/design.md §8.4): the answer stored for a send's Idempotency-Key holds the downstream's
 * reply to that very message ("250 2.0.0 Ok: queued as ..." in a 202 ACCEPTED whose settle never landed, or the 5xx
 * of a 422). It is evidence about the row itself, so it fits exactly. (The replies other rows recorded are used by
 * the matching, to tell whose a queue id is.)
 */
final class LedgerFacts implements EvidenceSource {
  static final String NAME = "ledger";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Future<Map<UUID, List<Sighting>>> find(List<Candidate> candidates, Duration window) {
    Map<UUID, List<Sighting>> found = new HashMap<>();
    for (Candidate c : candidates) {
      Sighting s = sighting(c);
      if (s != null) {
        found.put(c.id(), List.of(s));
      }
    }
    return Future.succeededFuture(found);
  }

  static Sighting sighting(Candidate c) {
    String reply = c.storedReply();
    if (reply == null || reply.length() < 3 || !Character.isDigit(reply.charAt(0))) {
      return null;
    }
    Sighting.Verdict verdict = switch (reply.charAt(0)) {
      case '2' -> Sighting.Verdict.ACCEPTED;
      case '5' -> Sighting.Verdict.REJECTED;
      default -> null; // a 4xx key is released, never stored; anything else says nothing
    };
    if (verdict == null) {
      return null;
    }
    return new Sighting(NAME, NAME, c.id().toString(), verdict, c.storedAt() == null ? null : c.storedAt().toInstant(), c.id(),
        c.messageIdHeader(), null, Set.of(), false, null, null,
        "the answer stored for this send's Idempotency-Key holds the downstream's reply: " + reply,
        List.of("idempotency key of " + c.id() + (c.storedAt() == null ? "" : " answered at " + c.storedAt()) + ": downstreamReply "
            + reply));
  }
}
