package dev.ledgerpost.operate.capacity;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** The capacity watch's address, on its own verticle ({@link SizeStore}): what the ledger weighs now. */
public final class CapacityMessages {
  private CapacityMessages() {}

  public static final String SIZE = "capacity.size";

  /** The tables whose rows are estimated; a name that is no table (not yet migrated) counts 0. */
  public record SizeQuery(List<String> tables) {}

  /**
   * The database's size on disk ({@code pg_database_size}), the planner's row estimate of each asked table summed
   * over its partitions (0 before its first ANALYZE), and the oldest message: its id and received_at (both null
   * when there is none).
   */
  public record LedgerSize(long databaseBytes, Map<String, Long> rows, UUID oldestId, OffsetDateTime oldestReceivedAt) {}
}
