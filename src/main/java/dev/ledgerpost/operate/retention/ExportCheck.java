package dev.ledgerpost.operate.retention;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Whether an export may stand in for the partition about to be dropped (docs/data-model.md §5.12), asked inside the
 * transaction that drops it. The archive only shows that a file matches its own manifest; this shows that the manifest
 * describes these rows as they are now: this ledger's (two ledgers sharing an archive directory write exports of the
 * same names), this partition's range and row counts, and no erasure since it was written (an older export still
 * holds the addresses an erasure replaced, and would keep them once the rows are gone).
 */
final class ExportCheck {
  /** Thrown inside the drop's transaction, which rolls it back: nothing is deleted. Its message is the reason. */
  static final class Refused extends SQLException {
    Refused(String reason) {
      super(reason);
    }
  }

  private ExportCheck() {}

  /** Before anything is deleted: the ledger, the range, and the rows of the two partitions. */
  static void beforeDrop(Connection c, PartitionArchiver.Archived a, UUID from, UUID to, long messages, long recipients)
      throws SQLException {
    UUID ledger = single(c, "SELECT ledger_id FROM ledger_identity", UUID.class);
    if (a.ledgerId() == null) {
      throw new Refused("the export names no ledger (written before ledger ids): it cannot be shown to hold this ledger's rows");
    }
    if (!a.ledgerId().equals(ledger)) {
      throw new Refused("the export was written by another ledger (" + a.ledgerId() + "; this ledger is " + ledger
          + "): ledgers that share an archive directory write exports of the same names");
    }
    if (!from.equals(a.fromId()) || !to.equals(a.toId())) {
      throw new Refused("the export covers [" + a.fromId() + ", " + a.toId() + "), the partition [" + from + ", " + to + ")");
    }
    rows("messages", messages, a);
    rows("recipients", recipients, a);
  }

  /** One table's rows in the partition (or deleted with it) against the export's. */
  static void rows(String table, long inLedger, PartitionArchiver.Archived a) throws Refused {
    long exported = a.rows().getOrDefault(table, 0L);
    if (exported != inLedger) {
      throw new Refused("the export holds " + exported + " " + table + " row(s), the ledger " + inLedger);
    }
  }

  /**
   * After the DROP, before the commit: an erasure updates every partition of {@code messages} first and holds their
   * locks until it commits, so once the DROP has its lock every erasure that could have changed these rows is
   * committed and counted here, and a later one waits for this transaction. {@code erasures} is append-only.
   */
  static void afterDrop(Connection c, PartitionArchiver.Archived a) throws SQLException {
    long now = single(c, "SELECT count(*) FROM erasures", Long.class);
    if (a.erasures() == null) {
      throw new Refused("the export does not say which erasures it reflects (written before format 2)");
    }
    if (a.erasures() != now) {
      throw new Refused("the export was written before the last " + (now - a.erasures()) + " erasure(s) (it saw "
          + a.erasures() + ", the ledger has " + now + "): it may hold an address the ledger no longer does");
    }
  }

  private static <T> T single(Connection c, String sql, Class<T> type) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(sql); ResultSet rs = st.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException(sql + " answered no row");
      }
      return rs.getObject(1, type);
    }
  }
}
