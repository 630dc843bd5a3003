package dev.ledgerpost.ledger;

/**
 * A message's place in the ledger (docs/contract.md §3.1). Only PENDING and UNKNOWN may still change. CAPTURED: the
 * message of a captured user or send key, kept and never relayed (docs/design.md §8.10).
 */
public enum MessageStatus {
  PENDING,
  SENT,
  FAILED_TEMP,
  FAILED_PERM,
  UNKNOWN,
  RESOLVED_DELIVERED,
  RESOLVED_NOT_DELIVERED,
  CAPTURED
}
