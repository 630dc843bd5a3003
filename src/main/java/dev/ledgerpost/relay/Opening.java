package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.platform.db.LedgerIds;
import java.time.Duration;
import java.util.UUID;

/**
 * How a message's ledger entry is opened (docs/contract.md §1.3): under a fresh id (SMTP), under the id the
 * intake chose (the send API's operation id), or that and bound to the request's Idempotency-Key in the
 * very statement that opens the entry (§7).
 */
public record Opening(UUID id, KeyRef key, Duration keyLease) {

  public static Opening fresh() {
    return new Opening(LedgerIds.next(), null, null);
  }

  public static Opening withId(UUID id) {
    return new Opening(id, null, null);
  }

  public static Opening keyed(UUID id, KeyRef key, Duration lease) {
    if (!key.operationId().equals(id)) {
      throw new IllegalArgumentException("a key binds the entry its claimant chose: " + key.operationId() + " is not " + id);
    }
    return new Opening(id, key, lease);
  }
}
