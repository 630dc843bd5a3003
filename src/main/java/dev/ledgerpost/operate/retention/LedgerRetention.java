package dev.ledgerpost.operate.retention;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.ledger.Partitions;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pass of the ledger partition job (docs/data-model.md §5.12): makes the weeks ahead, reports rows in the DEFAULT
 * partitions, and drops each pair of partitions whose upper bound is older than {@code ledger.retention}, whole, never
 * row by row. A partition is kept (and a CRITICAL line says why) while it holds a PENDING or UNKNOWN message: a fact
 * nobody settled is not silently lost. Otherwise it is first exported through the {@link PartitionArchiver}; with no
 * archiver it is dropped only when {@code ledger.retentionWithoutArchive} allows it. The drop is one transaction: the
 * satellite rows of its id range (resolutions, reconcile proposals, stale raises, resubmissions: row deletes on small tables), then
 * DROP of the recipients and messages partitions, whose exclusive locks are taken last and held only for the catalog
 * change. Inside it, what the export says it holds is compared with the partition ({@link ExportCheck}); an export
 * that is not these rows as they are now rolls it back with a CRITICAL line. The JDBC work runs on worker threads,
 * never on an event loop.
 */
public record LedgerRetention(Vertx vertx, DatabaseTarget target, LedgerRetention.Policy policy) {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerRetention.class);
  private static final UUID NIL = new UUID(0, 0);

  /** What one pass did: partitions (of messages) made, dropped, and kept past their retention. */
  public record Pass(List<String> made, List<String> dropped, List<String> kept) {}

  /** A messages partition past retention, its recipients twin, and its open rows. */
  private record Candidate(Partitions.Partition messages, String recipients, long pending, long unknown) {
    UUID from() {
      return messages.from() == null ? NIL : messages.from();
    }

    String archiveName() {
      return "ledger_" + messages.name().substring("messages_".length());
    }
  }

  /**
   * {@code ledger.retention}; the export ({@code null}: no {@code ledger.archiveDir}); and whether a partition may go
   * without one ({@code ledger.retentionWithoutArchive}).
   */
  public record Policy(Duration retention, PartitionArchiver archiver, boolean withoutArchive) {}

  /** One pass as of {@code now}; the partitions are handled one after another. */
  public Future<Pass> run(Instant now) {
    List<String> made = new ArrayList<>();
    List<Candidate> candidates = new ArrayList<>();
    return blocking(c -> {
      made.addAll(Partitions.ensureWeeks(c, now, Partitions.AHEAD_WEEKS + 1));
      reportDefaultRows(c);
      candidates.addAll(candidates(c, LedgerIds.lowest(now.minus(policy.retention()))));
      return null;
    }).compose(x -> next(candidates, 0, new Pass(made, new ArrayList<>(), new ArrayList<>())));
  }

  private Future<Pass> next(List<Candidate> candidates, int i, Pass pass) {
    if (i == candidates.size()) {
      return Future.succeededFuture(pass);
    }
    Candidate p = candidates.get(i);
    return handle(p, pass).recover(e -> {
      LOG.warn("ledger partition {} past retention was not dropped: {}; the next pass tries again", p.messages().name(),
          e.getMessage());
      pass.kept().add(p.messages().name());
      return Future.succeededFuture();
    }).compose(x -> next(candidates, i + 1, pass));
  }

  private Future<Void> handle(Candidate p, Pass pass) {
    if (p.pending() + p.unknown() > 0) {
      kept(p, p.pending(), p.unknown());
      pass.kept().add(p.messages().name());
      return Future.succeededFuture();
    }
    if (policy.archiver() == null && !policy.withoutArchive()) {
      LOG.warn("ledger partition {} is past ledger.retention ({}) but kept: no ledger.archiveDir to export it to, and "
          + "ledger.retentionWithoutArchive is not set", p.messages().name(), policy.retention());
      pass.kept().add(p.messages().name());
      return Future.succeededFuture();
    }
    Future<PartitionArchiver.Archived> archived = policy.archiver() == null
        ? Future.succeededFuture(null)
        : policy.archiver().archive(p.from(), p.messages().to(), p.archiveName());
    return archived.compose(export -> blocking(c -> drop(c, p, export)).map(messages -> {
      if (messages < 0) {
        pass.kept().add(p.messages().name());
        return null;
      }
      AuditLog.of(AuditEvent.LEDGER_PARTITION_DROPPED).with("partition", p.messages().name())
          .with("until", until(p.messages())).with("messages", messages).with("archive", export == null ? null : export.file())
          .log();
      pass.dropped().add(p.messages().name());
      return null;
    }));
  }

  /** Every messages partition whose upper bound is at or before {@code cutoff}, with its open rows counted. */
  private static List<Candidate> candidates(Connection c, UUID cutoff) throws SQLException {
    List<Partitions.Partition> recipients = Partitions.list(c, "recipients");
    List<Candidate> out = new ArrayList<>();
    for (Partitions.Partition m : Partitions.list(c, "messages")) {
      if (m.isDefault() || m.to() == null || Partitions.compare(m.to(), cutoff) > 0) {
        continue;
      }
      String twin = recipients.stream()
          .filter(r -> !r.isDefault() && java.util.Objects.equals(r.from(), m.from()) && m.to().equals(r.to()))
          .map(Partitions.Partition::name).findFirst().orElse(null);
      long[] open = open(c, m.name());
      out.add(new Candidate(m, twin, open[0], open[1]));
    }
    return out;
  }

  /** PENDING and UNKNOWN messages of one partition, through its index of the open rows (V40's messages_open_idx). */
  private static long[] open(Connection c, String partition) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("""
            SELECT count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'UNKNOWN')
              FROM %s WHERE settled_at IS NULL OR status = 'UNKNOWN'""".formatted(partition))) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }

  /**
   * The drop, one transaction; answers the messages it dropped, or -1 when an open row appeared since the candidates
   * were counted, or when {@code export} (null: none, {@code ledger.retentionWithoutArchive}) is not a copy of the
   * partition's rows as they are now (then nothing is deleted).
   */
  private static long drop(Connection c, Candidate p, PartitionArchiver.Archived export) throws SQLException {
    try {
      return dropChecked(c, p, export);
    } catch (ExportCheck.Refused e) {
      AuditLog.of(AuditEvent.LEDGER_PARTITION_EXPORT_REFUSED).with("partition", p.messages().name())
          .with("until", until(p.messages())).with("archive", export.file()).with("reason", e.getMessage()).log();
      return -1;
    }
  }

  private static long dropChecked(Connection c, Candidate p, PartitionArchiver.Archived export) throws SQLException {
    long[] dropped = {0};
    Partitions.inTransaction(c, st -> {
      long[] open = open(c, p.messages().name());
      if (open[0] + open[1] > 0) {
        kept(p, open[0], open[1]);
        dropped[0] = -1;
        return;
      }
      dropped[0] = count(st, p.messages().name());
      if (export != null) {
        ExportCheck.beforeDrop(c, export, p.from(), p.messages().to(), dropped[0],
            p.recipients() == null ? 0 : count(st, p.recipients()));
      }
      // resolutions first: a resolution names the reconcile proposal it accepted
      for (String satellite : List.of("resolutions", "reconcile_proposals", "stale_raises", "resubmissions")) {
        try (PreparedStatement ps = c.prepareStatement(
            "DELETE FROM " + satellite + " WHERE message_id >= ?::uuid AND message_id < ?::uuid")) {
          ps.setObject(1, p.from());
          ps.setObject(2, p.messages().to());
          int deleted = ps.executeUpdate();
          if (export != null) {
            ExportCheck.rows(satellite, deleted, export); // the rows deleted are the rows counted: nothing in between
          }
        }
      }
      // Last, so the parents' ACCESS EXCLUSIVE locks are held for the catalog change and the commit only.
      st.execute("DROP TABLE " + (p.recipients() == null ? "" : p.recipients() + ", ") + p.messages().name());
      if (export != null) {
        ExportCheck.afterDrop(c, export);
      }
    });
    return dropped[0];
  }

  private static long count(Statement st, String table) throws SQLException {
    try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void kept(Candidate p, long pending, long unknown) {
    AuditLog.of(AuditEvent.LEDGER_PARTITION_KEPT).with("partition", p.messages().name()).with("until", until(p.messages()))
        .with("pending", pending).with("unknown", unknown).log();
  }

  /** The DEFAULT partitions should stay empty: every row there is reported, every pass. */
  private static void reportDefaultRows(Connection c) throws SQLException {
    for (Partitions.Table t : Partitions.TABLES) {
      for (Partitions.Partition d : Partitions.list(c, t.name())) {
        if (!d.isDefault()) {
          continue;
        }
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT EXISTS (SELECT 1 FROM " + d.name() + ")")) {
          rs.next();
          if (rs.getBoolean(1)) {
            AuditLog.of(AuditEvent.LEDGER_DEFAULT_PARTITION_ROWS).with("table", t.name()).with("partition", d.name()).log();
          }
        }
      }
    }
  }

  /** The first instant a partition does not cover: the time inside its upper bound's UUIDv7. */
  static Instant until(Partitions.Partition p) {
    return LedgerIds.instant(p.to());
  }

  private interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  /** On a worker thread, unordered (an archiver may use workers of the same context), with a connection of its own. */
  private <T> Future<T> blocking(Work<T> work) {
    return vertx.executeBlocking(() -> {
      try (Connection c = target.connect()) {
        return work.run(c);
      }
    }, false);
  }
}
