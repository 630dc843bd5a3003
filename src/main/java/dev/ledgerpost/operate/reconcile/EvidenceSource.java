package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Where evidence of what the smarthost did comes from (docs/design.md §8.4): a Postfix mail log, a downstream
 * Ledgerpost, the ledger's own facts. A source only reads; it never changes a row and never sends mail.
 */
interface EvidenceSource {
  /** Its configured name: proposals and the resolutions they make ({@code reconcile:<name>}) name it. */
  String name();

  /**
   * What the source knows of these rows: for each row, the sightings that may be it (the matching decides which fit).
   * Called on the reconcile job's event loop; blocking work goes to a worker. A failure means "nothing learned now".
   */
  Future<Map<UUID, List<Sighting>>> find(List<Candidate> candidates, Duration window);
}
