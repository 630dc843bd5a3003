package dev.ledgerpost.ledger;

import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * Ledger ids in PostgreSQL's order. The ledger's tables are partitioned by ranges of id (docs/data-model.md §5.1), and a
 * batch statement bounds its rows by the batch's lowest and highest id so that a generic plan prunes to their
 * partitions (docs/contract.md §2.6 "Plans"). PostgreSQL compares a {@code uuid} byte by byte, unsigned; Java's
 * {@link UUID#compareTo} compares two signed longs, which disagrees whenever a half has its top bit set (every id's
 * variant bits set the low half's), so the bounds are taken in PostgreSQL's order, not Java's.
 */
final class Ids {
  /** PostgreSQL's {@code uuid} order: the high half unsigned, then the low half unsigned. */
  static final Comparator<UUID> POSTGRES_ORDER = (a, b) -> {
    int high = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
    return high != 0 ? high : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
  };

  private Ids() {}

  static <Q> UUID lowest(List<Q> batch, Function<Q, UUID> id) {
    return batch.stream().map(id).min(POSTGRES_ORDER).orElseThrow();
  }

  static <Q> UUID highest(List<Q> batch, Function<Q, UUID> id) {
    return batch.stream().map(id).max(POSTGRES_ORDER).orElseThrow();
  }
}
