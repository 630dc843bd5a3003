package dev.ledgerpost.operate.capacity;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * The capacity watch's values as plain numbers, read without waiting for the database: the last reading, taken
 * every {@code ledger.sizeInterval} (the oldest message's age moves with the clock between readings). The metrics
 * part binds them as {@code ledgerpost_ledger_bytes}, {@code ledgerpost_ledger_rows{table}},
 * {@code ledgerpost_ledger_oldest_seconds} and {@code ledgerpost_ledger_disk_free_bytes} /
 * {@code ..._disk_total_bytes}; the readiness check asks {@link #readinessReason}.
 */
public interface CapacityGauges {
  /** The tables whose rows are estimated, the values of the {@code table} tag. */
  List<String> TABLES = List.of("messages", "recipients", "outbox", "idempotency_keys", "webhook_deliveries",
      "reconcile_proposals");

  /** The ledger database's size on disk (tables, indexes, TOAST; not WAL). */
  double databaseBytes();

  /** The planner's estimate of one table's rows, summed over its partitions. */
  double rows(String table);

  /** Age of the oldest message by the time in its id; 0 when the ledger holds none. */
  double oldestSeconds();

  /** Whether the database's file system is visible from here (ledger.diskPath, or the embedded data dir). */
  boolean seesDisk();

  /** Free bytes of that file system for the database's user; empty until read, or when it cannot be. */
  OptionalDouble diskFreeBytes();

  OptionalDouble diskTotalBytes();

  /** Why a ready gateway is not all well (its disk is nearly full); empty when nothing is wrong. */
  Optional<String> readinessReason();
}
