package dev.ledgerpost.platform.tenants;

/**
 * What one user may send and how its mail is handled (docs/design.md §8.9), as the tenants file says: its own entry,
 * or the file's {@code defaults} for a user without one. A limit of 0 is no limit.
 *
 * @param messagesPerHour      messages accepted per clock hour, counted cluster-wide
 * @param messagesPerDay       messages accepted per UTC day, counted cluster-wide
 * @param recipientsPerMessage recipients one message may have
 * @param messageSize          bytes one message may have
 * @param capture              mail is recorded as CAPTURED with its bytes and never relayed
 * @param faults               fault injection rules (docs/design.md §8.11); only with {@code capture}
 */
public record TenantPolicy(long messagesPerHour, long messagesPerDay, long recipientsPerMessage, long messageSize,
    boolean capture, FaultPlan faults) {
  /** No file, or a file without {@code defaults}: nothing is limited and nothing captured. */
  public static final TenantPolicy UNLIMITED = new TenantPolicy(0, 0, 0, 0, false);

  public TenantPolicy {
    faults = faults == null ? FaultPlan.NONE : faults;
  }

  /** A policy without fault rules. */
  public TenantPolicy(long messagesPerHour, long messagesPerDay, long recipientsPerMessage, long messageSize,
      boolean capture) {
    this(messagesPerHour, messagesPerDay, recipientsPerMessage, messageSize, capture, FaultPlan.NONE);
  }
}
