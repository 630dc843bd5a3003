package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.LedgerMessages.KeyClaim;
import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.platform.db.LedgerIds;
import java.time.Duration;
import java.util.UUID;
import java.util.function.Function;

/**
 * How a message's ledger entry is opened (docs/contract.md §1.3): under a fresh id (SMTP), under the id the
 * intake chose (the send API's operation id), or that and claiming the request's Idempotency-Key in the very
 * statement that opens the entry (docs/design.md §7.2). {@code answer} gives, for the outcome the send would have if
 * its settle commits, the response its key stores (null: none, the key is released), so that the settle's own
 * statement stores it; null for an opening without a key.
 */
public record Opening(UUID id, KeyClaim key, Function<DeliveryOutcome, String> answer) {

  public static Opening fresh() {
    return new Opening(LedgerIds.next(), null, null);
  }

  public static Opening withId(UUID id) {
    return new Opening(id, null, null);
  }

  /**
   * @param requestHash the canonical request body's hash: a key reused with another body is refused
   * @param lease how long the bound key answers 409 before it is answered from the ledger
   * @param retention how long a key is remembered at all
   */
  public static Opening keyed(UUID id, KeyRef key, String requestHash, Duration lease, Duration retention,
      Function<DeliveryOutcome, String> answer) {
    if (!key.operationId().equals(id)) {
      throw new IllegalArgumentException("a key binds the entry its claimant chose: " + key.operationId() + " is not " + id);
    }
    return new Opening(id, new KeyClaim(key, requestHash, lease, retention), answer);
  }
}
