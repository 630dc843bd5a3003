package dev.ledgerpost.operate.erasure;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Map;

/** The erasure's address, served on its own verticle ({@link ErasureStore}; docs/design.md §8.6). */
public final class ErasureMessages {
  public static final String ERASE = "erasure.erase";
  /**
   * An erasure reads every table once in one transaction: on a large ledger that takes minutes, not the bus's usual
   * 30 s. A request that outlived this would be answered as failed while the transaction still commits.
   */
  public static final Duration TIMEOUT = Duration.ofHours(1);

  private ErasureMessages() {}

  /** Erase {@code address} (a valid mailbox) from every row; {@code reason} may be null. */
  public record Erase(String address, String reason, String operator) {}

  /** The {@code erasures} row: its id, the hash that replaced the address, and the rows changed per table. */
  public record Erased(long id, String addressHash, String keyId, String requestedBy, String reason, OffsetDateTime requestedAt,
      Map<String, Long> rows) {
    public long total() {
      return rows.values().stream().mapToLong(Long::longValue).sum();
    }
  }
}
