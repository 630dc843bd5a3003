package dev.ledgerpost.operate.retention;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.operate.archive.ArchiveKey;
import dev.ledgerpost.operate.archive.LedgerArchive;
import dev.ledgerpost.operate.archive.PartitionExport;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.ledger.Partitions;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * ledger.retention over real partitions (docs/data-model.md §5.12). Four weeks after the first (pre-V90) partition get
 * rows; the pass runs "400 days after the third": the first partition and week 1 are exported (a fake archiver that
 * writes what it finds in the range to a file) and dropped with their satellite rows, week 2 holds a PENDING row and
 * is kept with a CRITICAL line, weeks 3 and 4 are untouched. Without an archive nothing is dropped unless
 * ledger.retentionWithoutArchive says so.
 */
class LedgerRetentionTest {
  static final Duration RETENTION = Duration.ofDays(400);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().with("ledger.erasureKey", "k".repeat(40));

  private DatabaseTarget target;
  /** One archive key, as every node of a ledger (and here both ledgers) would be configured with. */
  private final ArchiveKey.Location key = new ArchiveKey.Location(GatewayHarness.tempDir("archive-key-").resolve("key"), true);
  /** Monday of the week after the first partition's end, and the three after it. */
  private final List<Instant> weeks = new ArrayList<>();
  /** The messages of each week, by index in {@link #weeks}. */
  private final List<List<UUID>> rows = new ArrayList<>();
  private UUID pending;

  @BeforeEach
  void fourWeeksOfRows() throws Exception {
    target = DatabaseTarget.fromUrl(gateway.databaseUrl(), Duration.ofMillis(1000));
    rows.addAll(fourWeeksOfRows(target, gateway.databaseUrl(), weeks));
    pending = LedgerIds.lowest(weeks.get(1).plus(Duration.ofDays(3)));
  }

  /**
   * Five SENT messages with their satellites in each of the four weeks after the ledger's first partition, and one
   * PENDING message in the second week; fills {@code weeks} with their Mondays and answers the messages of each week.
   * The ids follow from the weeks alone, so two ledgers migrated the same day get the same ones.
   */
  static List<List<UUID>> fourWeeksOfRows(DatabaseTarget target, String url, List<Instant> weeks) throws Exception {
    List<List<UUID>> rows = new ArrayList<>();
    try (Connection c = target.connect()) {
      Partitions.Partition first = Partitions.list(c, "messages").get(0);
      Instant w1 = LedgerRetention.until(first);
      Partitions.ensureWeeks(c, w1, 4);
      weeks.clear();
      for (int w = 0; w < 4; w++) {
        Instant week = w1.plus(Duration.ofDays(7L * w));
        weeks.add(week);
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          UUID id = LedgerIds.lowest(week.plus(Duration.ofHours(1 + 30L * i)));
          LedgerRows.insert(url, id, "SENT", "ACCEPTED", week, null);
          satellites(c, id);
          ids.add(id);
        }
        rows.add(ids);
      }
    }
    LedgerRows.insertPending(url, List.of(LedgerIds.lowest(weeks.get(1).plus(Duration.ofDays(3)))), weeks.get(1));
    return rows;
  }

  @Test
  void anOldPartitionIsExportedThenDroppedWithItsSatellitesAndOneHoldingAPendingRowIsKept() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    AtomicInteger archived = new AtomicInteger();
    PartitionArchiver fake = (from, to, name) -> gateway.vertx().executeBlocking(() -> {
      archived.incrementAndGet();
      Path file = dir.resolve(name + ".txt");
      Files.writeString(file, "messages=" + count("SELECT count(*) FROM messages WHERE id >= '" + from + "' AND id < '" + to + "'")
          + " resolutions=" + count("SELECT count(*) FROM resolutions WHERE message_id >= '" + from + "' AND message_id < '" + to + "'"));
      return asTheLedgerHasIt(file, from, to);
    });
    String w1 = Partitions.name("messages", weeks.get(0));
    String w2 = Partitions.name("messages", weeks.get(1));

    LedgerRetention.Pass pass;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, fake, false)).run(afterThirdWeek()));
      assertThat(audit.errorsContaining("CRITICAL audit_event=ledger_partition_kept", "partition=" + w2, "pending=1",
          "unknown=0")).hasSize(1);
      assertThat(audit.linesContaining("audit_event=ledger_partition_dropped", "partition=" + w1, "messages=5",
          "archive=" + dir.resolve("ledger_" + w1.substring("messages_".length()) + ".txt"))).hasSize(1);
    }

    assertThat(pass.dropped()).hasSize(2).contains(w1).anyMatch(n -> n.startsWith("messages_before_"));
    assertThat(pass.kept()).containsExactly(w2);
    assertThat(archived.get()).isEqualTo(2);
    assertThat(Files.readString(dir.resolve("ledger_" + w1.substring("messages_".length()) + ".txt")))
        .as("exported before the drop").isEqualTo("messages=5 resolutions=5");

    List<String> left = names("messages");
    assertThat(left).doesNotContain(w1).contains(w2, Partitions.name("messages", weeks.get(2)),
        Partitions.name("messages", weeks.get(3)), "messages_default");
    assertThat(left).noneMatch(n -> n.startsWith("messages_before_"));
    assertThat(names("recipients")).doesNotContain(Partitions.name("recipients", weeks.get(0)))
        .contains(Partitions.name("recipients", weeks.get(1)));
    for (String satellite : List.of("recipients", "resolutions", "stale_raises", "reconcile_proposals")) {
      assertThat(count("SELECT count(*) FROM " + satellite + " WHERE message_id = ANY('" + array(rows.get(0)) + "')"))
          .as(satellite + " of the dropped week").isZero();
      for (int w = 1; w < 4; w++) {
        assertThat(count("SELECT count(*) FROM " + satellite + " WHERE message_id = ANY('" + array(rows.get(w)) + "')"))
            .as(satellite + " of week " + (w + 1)).isEqualTo(5);
      }
    }
    assertThat(LedgerRows.status(gateway.databaseUrl(), pending)).isEqualTo("PENDING");

    // Once its row is settled, the next pass takes the kept week too.
    try (Connection c = target.connect(); var st = c.createStatement()) {
      st.execute("UPDATE messages SET status = 'SENT', version = 2, settled_at = now() WHERE id = '" + pending + "'");
    }
    pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, fake, false)).run(afterThirdWeek()));
    assertThat(pass.dropped()).containsExactly(w2);
    assertThat(names("messages")).doesNotContain(w2).contains(Partitions.name("messages", weeks.get(2)));
  }

  @Test
  void withoutAnArchiveNothingIsDroppedUnlessRetentionWithoutArchiveSaysSo() throws Exception {
    String w1 = Partitions.name("messages", weeks.get(0));
    LedgerRetention.Pass pass;
    try (LogCapture log = LogCapture.of(LedgerRetention.class.getName())) {
      pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, null, false)).run(afterThirdWeek()));
      assertThat(log.warningsContaining(w1, "no ledger.archiveDir", "ledger.retentionWithoutArchive")).hasSize(1);
    }
    assertThat(pass.dropped()).isEmpty();
    assertThat(pass.kept()).contains(w1);
    assertThat(names("messages")).contains(w1);
    assertThat(count("SELECT count(*) FROM resolutions")).isEqualTo(20);

    pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, null, true)).run(afterThirdWeek()));
    assertThat(pass.dropped()).contains(w1);
    assertThat(names("messages")).doesNotContain(w1);
    assertThat(count("SELECT count(*) FROM resolutions")).isEqualTo(15);
  }

  @Test
  void rowsInTheDefaultPartitionAreReportedAsCritical() throws Exception {
    // Far beyond the weeks made ahead: such a row has no weekly partition and lands in DEFAULT.
    UUID far = LedgerIds.lowest(weeks.get(3).plus(Duration.ofDays(700)));
    LedgerRows.insert(gateway.databaseUrl(), far, "SENT", "ACCEPTED", Instant.now(), null);
    assertThat(count("SELECT count(*) FROM messages_default")).isEqualTo(1);
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      GatewayHarness.await(new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, null, false)).run(Instant.now()));
      assertThat(audit.errorsContaining("CRITICAL audit_event=ledger_default_partition_rows", "table=messages",
          "partition=messages_default")).hasSize(1);
    }
  }

  /** "Now" for the pass: 400 days and an hour after the third week began, so the weeks before it are past retention. */
  @Test
  void theGatewaysArchiverWritesAnExportThatVerifiesAndTakesOneAlreadyWritten() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    PartitionArchiver archiver = archiver(target, dir, "test-node");
    String week = Partitions.name("messages", weeks.get(0)).substring("messages_".length());

    LedgerRetention.Pass pass = GatewayHarness.await(
        new LedgerRetention(gateway.vertx(), target, new LedgerRetention.Policy(RETENTION, archiver, false)).run(afterThirdWeek()));

    assertThat(pass.dropped()).contains(Partitions.name("messages", weeks.get(0)));
    Path file = dir.resolve("ledger_" + week + ".jsonl.gz");
    LedgerArchive.Verification v = GatewayHarness.await(LedgerArchive.verify(gateway.vertx(), file, key));
    assertThat(v.ok()).as(v.line()).isTrue();
    assertThat(v.manifest().rows()).containsEntry("messages", 5L).containsEntry("recipients", 5L)
        .containsEntry("resolutions", 5L);

    // A pass that exported and then could not drop leaves the export behind: the next one takes it as it is.
    UUID from = LedgerIds.lowest(weeks.get(0));
    UUID to = LedgerIds.lowest(weeks.get(1));
    assertThat(GatewayHarness.await(archiver.archive(from, to, "ledger_" + week)).file()).isEqualTo(file);
    // One that does not verify keeps its partition.
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x40;
    Files.write(file, bytes);
    assertThatThrownBy(() -> GatewayHarness.await(archiver.archive(from, to, "ledger_" + week)))
        .hasMessageContaining("exists and does not verify");
  }

  /**
   * Two ledgers (two databases, the same weeks and message ids, the same archive key) write into one archive
   * directory: the first exports and drops its week; the second finds an export of that name, which verifies, but
   * holds the first ledger's rows, and must not drop its own week on it.
   */
  @Test
  void anotherLedgersExportOfTheSameWeekDoesNotStandInForThisLedgersRows() throws Exception {
    Path dir = GatewayHarness.tempDir("shared-archive-");
    String w1 = Partitions.name("messages", weeks.get(0));
    io.vertx.core.Vertx own = io.vertx.core.Vertx.vertx();
    try (GatewayHarness other = GatewayHarness.start(own, GatewayHarness.defaults(gateway.downstream().port()))) {
      DatabaseTarget otherTarget = DatabaseTarget.fromUrl(other.databaseUrl(), Duration.ofMillis(1000));
      List<Instant> otherWeeks = new ArrayList<>();
      fourWeeksOfRows(otherTarget, other.databaseUrl(), otherWeeks);
      assertThat(otherWeeks).as("both ledgers were migrated the same week").isEqualTo(weeks);

      LedgerRetention.Pass first = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target,
          new LedgerRetention.Policy(RETENTION, archiver(target, dir, "node-a"), false)).run(afterThirdWeek()));
      assertThat(first.dropped()).contains(w1);

      LedgerRetention.Pass second;
      try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
        second = GatewayHarness.await(new LedgerRetention(gateway.vertx(), otherTarget,
            new LedgerRetention.Policy(RETENTION, archiver(otherTarget, dir, "node-b"), false)).run(afterThirdWeek()));
        assertThat(second.dropped()).as("nothing of the second ledger goes on the first's exports").isEmpty();
        assertThat(audit.errorsContaining("CRITICAL audit_event=ledger_partition_export_refused", "partition=" + w1,
            "another ledger")).hasSize(1);
      }
      assertThat(second.kept()).contains(w1);
      try (Connection c = otherTarget.connect()) {
        assertThat(Partitions.list(c, "messages").stream().map(Partitions.Partition::name)).contains(w1);
      }
      assertThat(LedgerRows.count(other.databaseUrl(), "SELECT count(*) FROM " + w1)).isEqualTo(5);
      assertThat(LedgerRows.count(other.databaseUrl(), "SELECT count(*) FROM resolutions")).isEqualTo(20);
    } finally {
      GatewayHarness.await(own.close());
    }
  }

  /**
   * A pass that exported a week and then failed to drop it leaves the export behind; an erasure of an address of
   * that week follows. The export still verifies, but holds the address the ledger no longer does: it must not stand
   * in for the week. Once an operator moves it away, the next pass exports the erased rows and drops the week.
   */
  @Test
  void anExportFromBeforeAnErasureDoesNotStandInForTheErasedRows() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    PartitionArchiver archiver = archiver(target, dir, "test-node");
    String w1 = Partitions.name("messages", weeks.get(0));
    String name = "ledger_" + w1.substring("messages_".length());
    GatewayHarness.await(archiver.archive(LedgerIds.lowest(weeks.get(0)), LedgerIds.lowest(weeks.get(1)), name));
    java.net.http.HttpResponse<String> erased = gateway.post("/api/v1/erasures", new io.vertx.core.json.JsonObject()
        .put("address", "b@example.net").put("reason", "art. 17").put("operator", "alice").encode());
    assertThat(erased.statusCode()).as(erased.body()).isEqualTo(200);
    assertThat(count("SELECT count(*) FROM " + Partitions.name("recipients", weeks.get(0))
        + " WHERE address = 'b@example.net'")).as("erased").isZero();

    LedgerRetention.Pass pass;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target,
          new LedgerRetention.Policy(RETENTION, archiver, false)).run(afterThirdWeek()));
      assertThat(pass.dropped()).doesNotContain(w1);
      assertThat(audit.errorsContaining("CRITICAL audit_event=ledger_partition_export_refused", "partition=" + w1,
          "erasure")).hasSize(1);
    }
    assertThat(names("messages")).contains(w1);
    assertThat(count("SELECT count(*) FROM " + w1)).isEqualTo(5);

    Path aside = GatewayHarness.tempDir("aside-");
    for (String suffix : List.of(".jsonl.gz", ".suppressions.jsonl.gz", ".manifest.json")) {
      Files.move(dir.resolve(name + suffix), aside.resolve(name + suffix));
    }
    pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target,
        new LedgerRetention.Policy(RETENTION, archiver, false)).run(afterThirdWeek()));
    assertThat(pass.dropped()).contains(w1);
    try (var in = new java.util.zip.GZIPInputStream(Files.newInputStream(dir.resolve(name + ".jsonl.gz")))) {
      String export = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(export).contains("erased:").doesNotContain("b@example.net");
    }
  }

  /**
   * An export that says it holds one resolution fewer than the week has: the DELETE of the satellites has already run
   * when that shows, and the whole transaction rolls back (every row stays, the partition too).
   */
  @Test
  void anExportWhoseRowsAreNotThePartitionsKeepsItAndEveryRow() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    String w1 = Partitions.name("messages", weeks.get(0));
    PartitionArchiver oneShort = (from, to, name) -> gateway.vertx().executeBlocking(() -> {
      PartitionArchiver.Archived faithful = asTheLedgerHasIt(dir.resolve(name + ".txt"), from, to);
      java.util.Map<String, Long> rows = new java.util.LinkedHashMap<>(faithful.rows());
      rows.merge("resolutions", -1L, Long::sum);
      return new PartitionArchiver.Archived(faithful.file(), faithful.ledgerId(), from, to, rows, faithful.erasures());
    });
    LedgerRetention.Pass pass;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      pass = GatewayHarness.await(new LedgerRetention(gateway.vertx(), target,
          new LedgerRetention.Policy(RETENTION, oneShort, false)).run(afterThirdWeek()));
      assertThat(audit.errorsContaining("CRITICAL audit_event=ledger_partition_export_refused", "partition=" + w1,
          "the export holds 4 resolutions row(s), the ledger 5")).hasSize(1);
    }
    assertThat(pass.dropped()).isEmpty();
    assertThat(pass.kept()).contains(w1);
    assertThat(names("messages")).contains(w1);
    for (String satellite : List.of("resolutions", "reconcile_proposals", "stale_raises")) {
      assertThat(count("SELECT count(*) FROM " + satellite + " WHERE message_id = ANY('" + array(rows.get(0)) + "')"))
          .as(satellite + " of the kept week, deleted and rolled back").isEqualTo(5);
    }
  }

  private PartitionArchiver archiver(DatabaseTarget on, Path dir, String node) {
    return new PartitionExport(gateway.vertx(), on, dir, node, key);
  }

  /** What a faithful export of the range says it holds, read from the ledger now. */
  private PartitionArchiver.Archived asTheLedgerHasIt(Path file, UUID from, UUID to) throws Exception {
    java.util.Map<String, Long> counts = new java.util.LinkedHashMap<>();
    for (String table : List.of("messages", "recipients", "reconcile_proposals", "resolutions", "stale_raises")) {
      String column = table.equals("messages") ? "id" : "message_id";
      counts.put(table, count("SELECT count(*) FROM " + table + " WHERE " + column + " >= '" + from + "' AND " + column
          + " < '" + to + "'"));
    }
    return new PartitionArchiver.Archived(file, UUID.fromString(LedgerRows.string(gateway.databaseUrl(),
        "SELECT ledger_id::text FROM ledger_identity")), from, to, counts, count("SELECT count(*) FROM erasures"));
  }

  private Instant afterThirdWeek() {
    return weeks.get(2).plus(RETENTION).plus(Duration.ofHours(1));
  }

  /** A resolution, a stale raise and a reconcile proposal of one message. */
  private static void satellites(Connection c, UUID id) throws SQLException {
    try (PreparedStatement r = c.prepareStatement(
            "INSERT INTO resolutions (message_id, outcome, operator, note) VALUES (?, 'DELIVERED', 'op', 'n')");
        PreparedStatement s = c.prepareStatement("INSERT INTO stale_raises (message_id, raises, last_raised_at) VALUES (?, 1, now())");
        PreparedStatement p = c.prepareStatement("""
            INSERT INTO reconcile_proposals (message_id, message_version, outcome, confidence, source, evidence_ref, evidence)
            VALUES (?, 1, 'DELIVERED', 'exact', 'test', ?, '{}')""")) {
      r.setObject(1, id);
      r.execute();
      s.setObject(1, id);
      s.execute();
      p.setObject(1, id);
      p.setString(2, id.toString());
      p.execute();
    }
  }

  private List<String> names(String table) throws SQLException {
    try (Connection c = target.connect()) {
      return Partitions.list(c, table).stream().map(Partitions.Partition::name).toList();
    }
  }

  private long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  private static String array(List<UUID> ids) {
    return "{" + String.join(",", ids.stream().map(UUID::toString).toList()) + "}";
  }
}
