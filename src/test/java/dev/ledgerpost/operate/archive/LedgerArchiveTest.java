package dev.ledgerpost.operate.archive;

import dev.ledgerpost.ledger.LedgerPart;

import static dev.ledgerpost.testing.GatewayHarness.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.operate.archive.LedgerArchive.Verification;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Export and verify against a migrated ledger (a gateway's), and against partitioned tables of the same names. */
class LedgerArchiveTest {
  static final Instant START = Instant.parse("2025-03-03T10:00:00Z");
  static final UUID FROM = LedgerIds.lowest(START);
  static final UUID TO = LedgerIds.lowest(START.plus(Duration.ofHours(1)));

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension();

  static ArchiveRows.Seeded seeded;
  /** The ledger's archive key, generated on the first export as the gateway's is. */
  static final ArchiveKey.Location KEY = new ArchiveKey.Location(GatewayHarness.tempDir("archive-key-").resolve("archive-key"),
      true);

  @BeforeAll
  static void seed() throws Exception {
    seeded = ArchiveRows.seed(gateway.databaseUrl(), START);
  }

  Manifest export(Path dir, String name) throws Exception {
    return await(LedgerArchive.export(gateway.vertx(), gateway.gateway().part(LedgerPart.class).target(), KEY, dir, FROM, TO, name, "node-a"));
  }

  static Verification verify(Path file) {
    return LedgerArchive.verify(file, KEY.load());
  }

  /** The manifest authenticated again under the ledger's key, as one who holds the key could. */
  static void resign(Path manifest) throws Exception {
    Manifest m = Manifest.fromJson(new JsonObject(Files.readString(manifest)));
    Files.writeString(manifest, m.signed(KEY.load()).toJson().encodePrettily());
  }

  /** The range's rows as the database counts them, table by table. */
  static Map<String, Long> countsInDatabase(String url) throws Exception {
    Map<String, Long> counts = new LinkedHashMap<>();
    for (LedgerArchive.Table t : LedgerArchive.TABLES) {
      counts.put(t.name(), LedgerRows.count(url, "SELECT count(*) FROM " + t.name() + " WHERE " + t.messageColumn()
          + " >= '" + FROM + "' AND " + t.messageColumn() + " < '" + TO + "'"));
    }
    return counts;
  }

  static List<JsonObject> lines(Path gz) throws Exception {
    List<JsonObject> out = new ArrayList<>();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(gz)),
        StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        out.add(new JsonObject(line));
      }
    }
    return out;
  }

  @Test
  void anExportHoldsEveryRowOfItsRangeAsPostgresqlGaveItAndVerifies() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    Manifest m = export(dir, "hour");

    Map<String, Long> expected = countsInDatabase(gateway.databaseUrl());
    assertThat(expected).as("the seed wrote what the test counts on").containsExactlyEntriesOf(orderedCounts(7, 14, 2, 2, 1, 1));
    assertThat(m.rows()).containsExactlyEntriesOf(expected);
    assertThat(m.fromId()).isEqualTo(FROM);
    assertThat(m.toId()).isEqualTo(TO);
    assertThat(m.receivedFrom()).isEqualTo(START);
    assertThat(m.receivedTo()).isEqualTo(START.plus(Duration.ofMinutes(6)));
    assertThat(m.node()).isEqualTo("node-a");
    assertThat(m.schemaVersion()).as("the ledger's Flyway version").isNotBlank();
    assertThat(m.ledgerId()).as("the ledger's identity (V96)")
        .hasToString(LedgerRows.string(gateway.databaseUrl(), "SELECT ledger_id::text FROM ledger_identity"));
    assertThat(m.erasures()).as("no erasure yet").isZero();
    assertThat(m.formatVersion()).isEqualTo(3);
    assertThat(m.keyId()).isEqualTo(KEY.load().id());
    assertThat(Files.getPosixFilePermissions(KEY.file())).as("the generated key is the owner's only")
        .isEqualTo(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    assertThat(m.file()).isEqualTo("hour.jsonl.gz");
    Path gz = dir.resolve("hour.jsonl.gz");
    assertThat(Files.size(gz)).isEqualTo(m.bytes());
    try (var listing = Files.list(dir)) {
      assertThat(listing.map(p -> p.getFileName().toString()).sorted().toList())
          .as("the three files, and no temporary one left").containsExactly("hour.jsonl.gz", "hour.manifest.json",
              "hour.suppressions.jsonl.gz");
    }
    assertThat(Manifest.fromJson(new JsonObject(Files.readString(dir.resolve("hour.manifest.json"))))).isEqualTo(m);

    List<JsonObject> rows = lines(gz);
    assertThat(rows).hasSize((int) m.totalRows());
    assertThat(rows.stream().map(r -> r.getString("table")).distinct().toList())
        .as("tables in load order, each in one block").containsExactly("messages", "recipients", "reconcile_proposals",
            "resolutions", "stale_raises", "resubmissions");
    List<JsonObject> messages = rows.stream().filter(r -> r.getString("table").equals("messages"))
        .map(r -> r.getJsonObject("row")).toList();
    assertThat(messages.stream().map(r -> UUID.fromString(r.getString("id"))).toList()).isEqualTo(seeded.inRange());
    assertThat(messages.stream().map(r -> r.getString("status")).toList()).containsExactly(ArchiveRows.STATUSES);
    assertThat(messages.get(1).getString("mail_from")).as("text kept exactly through COPY and JSON").isEqualTo(ArchiveRows.TRICKY);
    assertThat(messages.get(0).fieldNames()).as("every column, by its own name").contains("id", "intake", "mail_from",
        "received_at", "settled_at", "version", "body_sha256", "sent_sha256", "dsn_ret");
    JsonObject proposal = rows.stream().filter(r -> r.getString("table").equals("reconcile_proposals"))
        .map(r -> r.getJsonObject("row")).filter(r -> r.getString("state").equals("OPEN")).findFirst().orElseThrow();
    assertThat(proposal.getString("message_id")).isEqualTo(seeded.unknown().toString());
    assertThat(proposal.getJsonObject("evidence").getString("summary")).as("jsonb as a JSON object").isEqualTo(ArchiveRows.TRICKY);
    assertThat(rows.stream().map(r -> r.getJsonObject("row").getString(r.getString("table").equals("messages") ? "id" : "message_id")))
        .as("nothing of the messages outside the range").doesNotContain(seeded.before().toString(), seeded.atEnd().toString());

    Verification v = verify(gz);
    assertThat(v.outcome()).as(v.line()).isEqualTo(Verification.Outcome.OK);
    assertThat(v.line()).startsWith("OK ").contains("27 row(s)", m.sha256());
    assertThat(verify(dir.resolve("hour.manifest.json")).ok()).as("by its manifest too").isTrue();
  }

  @Test
  void anExistingExportIsNeverReplaced() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    Manifest first = export(dir, "once");
    byte[] before = Files.readAllBytes(dir.resolve("once.jsonl.gz"));

    assertThatThrownBy(() -> export(dir, "once")).isInstanceOfSatisfying(ArchiveRefused.class,
        e -> assertThat(e.reason()).isEqualTo(ArchiveRefused.Reason.EXISTS)).hasMessageContaining("never replaces");
    assertThat(Files.readAllBytes(dir.resolve("once.jsonl.gz"))).isEqualTo(before);
    assertThat(verify(dir.resolve("once.jsonl.gz")).manifest()).isEqualTo(first);

    Files.writeString(dir.resolve(".busy.jsonl.gz.partial"), "another export writing");
    assertThatThrownBy(() -> export(dir, "busy")).isInstanceOfSatisfying(ArchiveRefused.class,
        e -> assertThat(e.reason()).isEqualTo(ArchiveRefused.Reason.EXISTS)).hasMessageContaining("being written");
    assertThat(Files.readString(dir.resolve(".busy.jsonl.gz.partial"))).as("left to its writer").isEqualTo("another export writing");
    assertThat(dir.resolve("busy.manifest.json")).doesNotExist();
  }

  @Test
  void anEmptyOrReversedRangeAndAPathAsNameAreRefused() {
    Path dir = GatewayHarness.tempDir("archive-");
    DatabaseTarget target = gateway.gateway().part(LedgerPart.class).target();
    assertThatThrownBy(() -> await(LedgerArchive.export(gateway.vertx(), target, KEY, dir, TO, FROM, "x", "n")))
        .isInstanceOfSatisfying(ArchiveRefused.class, e -> assertThat(e.reason()).isEqualTo(ArchiveRefused.Reason.BAD_RANGE));
    assertThatThrownBy(() -> await(LedgerArchive.export(gateway.vertx(), target, KEY, dir, FROM, FROM, "x", "n")))
        .isInstanceOf(ArchiveRefused.class).hasMessageContaining("empty");
    assertThatThrownBy(() -> await(LedgerArchive.export(gateway.vertx(), target, KEY, dir, FROM, TO, "../x", "n")))
        .isInstanceOf(ArchiveRefused.class).hasMessageContaining("not a plain file name");
  }

  /** An export copied elsewhere, to damage. */
  Path copyOfExport() throws Exception {
    Path dir = GatewayHarness.tempDir("archive-");
    Path dir2 = GatewayHarness.tempDir("damaged-");
    export(dir, "d");
    Files.copy(dir.resolve("d.jsonl.gz"), dir2.resolve("d.jsonl.gz"));
    Files.copy(dir.resolve("d.manifest.json"), dir2.resolve("d.manifest.json"));
    Files.copy(dir.resolve("d.suppressions.jsonl.gz"), dir2.resolve("d.suppressions.jsonl.gz"));
    return dir2.resolve("d.jsonl.gz");
  }

  @Test
  void aFlippedByteFailsOnTheChecksum() throws Exception {
    Path gz = copyOfExport();
    byte[] b = Files.readAllBytes(gz);
    b[b.length / 2] ^= 0x01;
    Files.write(gz, b);

    Verification v = verify(gz);
    assertThat(v.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(v.line()).startsWith("checksum mismatch: the sha256 of " + gz).contains("the manifest says " + v.manifest().sha256());
  }

  @Test
  void aTruncatedFileFailsOnItsSizeAndOnDecompressingWhenTheManifestWasMadeToMatch() throws Exception {
    Path gz = copyOfExport();
    byte[] b = Files.readAllBytes(gz);
    Files.write(gz, java.util.Arrays.copyOf(b, b.length / 2));

    Verification v = verify(gz);
    assertThat(v.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(v.line()).contains("is " + b.length / 2 + " bytes, the manifest says " + b.length, "(truncated)");

    // A manifest rewritten for the truncated file: its size and checksum match, the content does not end.
    Path manifest = gz.resolveSibling("d.manifest.json");
    java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
    JsonObject json = new JsonObject(Files.readString(manifest)).put("bytes", b.length / 2)
        .put("sha256", java.util.HexFormat.of().formatHex(sha.digest(Files.readAllBytes(gz))));
    Files.writeString(manifest, json.encode());
    resign(manifest);
    Verification cut = verify(gz);
    assertThat(cut.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(cut.line()).contains("does not decompress to its end");
  }

  @Test
  void aManifestWithEditedCountsFailsNamingTheTable() throws Exception {
    Path gz = copyOfExport();
    Path manifest = gz.resolveSibling("d.manifest.json");
    JsonObject json = new JsonObject(Files.readString(manifest));
    json.getJsonObject("rows").put("recipients", 15);
    Files.writeString(manifest, json.encodePrettily());
    assertThat(verify(manifest).line()).as("edited, it is not authentic").contains("is not authentic");
    resign(manifest);

    Verification v = verify(manifest);
    assertThat(v.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(v.line()).isEqualTo("recipients: 14 row(s) in " + gz + ", the manifest says 15");

    Files.writeString(manifest, json.copy().put("file", "../elsewhere.jsonl.gz").put("mac", "").encode());
    assertThat(verify(manifest).line()).contains("names ../elsewhere.jsonl.gz, which is not a file beside it");
    Files.writeString(manifest, "{\"format\": \"something else\"}");
    assertThat(verify(gz).line()).contains("is not valid", "not a ledger export manifest");
    Files.delete(manifest);
    Verification none = verify(gz);
    assertThat(none.outcome()).isEqualTo(Verification.Outcome.UNREADABLE);
    assertThat(none.line()).contains("no manifest");
  }

  /**
   * Rewrites an export as someone with write access to the archive could: its lines changed by {@code edit}, gzipped
   * again, and the manifest's sha256 and bytes recomputed to match.
   */
  static void rewrite(Path gz, java.util.function.Consumer<List<JsonObject>> edit) throws Exception {
    List<JsonObject> rows = lines(gz);
    edit.accept(rows);
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream out = new java.util.zip.GZIPOutputStream(bytes)) {
      for (JsonObject row : rows) {
        out.write((row.encode() + "\n").getBytes(StandardCharsets.UTF_8));
      }
    }
    Files.write(gz, bytes.toByteArray());
    Path manifest = gz.resolveSibling(gz.getFileName().toString().replace(Manifest.DATA_SUFFIX, Manifest.SUFFIX));
    JsonObject json = new JsonObject(Files.readString(manifest)).put("bytes", (long) bytes.size())
        .put("sha256", java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
            .digest(bytes.toByteArray())));
    Files.writeString(manifest, json.encodePrettily());
  }

  static JsonObject firstOf(List<JsonObject> rows, String table) {
    return rows.stream().filter(r -> r.getString("table").equals(table)).findFirst().orElseThrow().getJsonObject("row");
  }

  @Test
  void anExportWithEditedRowsAndItsChecksumAndSizeRecomputedFails() throws Exception {
    Path gz = copyOfExport();
    rewrite(gz, rows -> firstOf(rows, "messages").put("status", "RESOLVED_NOT_DELIVERED"));

    Verification v = verify(gz);
    assertThat(v.outcome()).as(v.line()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(v.line()).isEqualTo("manifest " + gz.resolveSibling("d.manifest.json") + " is not authentic: its MAC does not "
        + "match its content under key " + KEY.load().id() + " (the manifest was changed after the ledger wrote it)");
  }

  @Test
  void aRowOutsideTheManifestsRangeFails() throws Exception {
    Path gz = copyOfExport();
    rewrite(gz, rows -> firstOf(rows, "recipients").put("message_id", seeded.atEnd().toString()));
    resign(gz.resolveSibling("d.manifest.json")); // a manifest the ledger could have written: the rows decide

    Verification v = verify(gz);
    assertThat(v.outcome()).as(v.line()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(v.line()).contains("recipients row with message_id " + seeded.atEnd() + " is outside the manifest's range");
  }

  @Test
  void withoutTheKeyOrUnderAnotherAnUntouchedExportIsNotAuthenticatedNeverOk() throws Exception {
    Path gz = copyOfExport();
    assertThat(verify(gz).outcome()).as("with the key").isEqualTo(Verification.Outcome.OK);
    assertThat(verify(gz).line()).contains("manifest authenticated (key " + KEY.load().id() + ")");

    Verification none = LedgerArchive.verify(gz, null);
    assertThat(none.outcome()).isEqualTo(Verification.Outcome.UNAUTHENTICATED);
    assertThat(none.line()).startsWith("NOT AUTHENTICATED " + gz).contains("no archive key");
    Verification other = LedgerArchive.verify(gz, ArchiveKey.of("x".repeat(40)));
    assertThat(other.outcome()).isEqualTo(Verification.Outcome.UNAUTHENTICATED);
    assertThat(other.line()).contains("signed under key " + KEY.load().id());

    // Format 1 had no MAC: read, checked, and never taken as authentic.
    Path manifest = gz.resolveSibling("d.manifest.json");
    JsonObject v1 = new JsonObject(Files.readString(manifest)).put("formatVersion", 1);
    for (String member : List.of("ledgerId", "erasures", "keyId", "mac")) {
      v1.remove(member);
    }
    Files.writeString(manifest, v1.encodePrettily());
    Verification old = verify(gz);
    assertThat(old.outcome()).isEqualTo(Verification.Outcome.UNAUTHENTICATED);
    assertThat(old.line()).contains("format 1 manifest, which carries no MAC");
  }

  /** The file's lines, as text, exactly. */
  static List<String> textLines(Path gz) throws Exception {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(gz)),
        StandardCharsets.UTF_8))) {
      return r.lines().toList();
    }
  }

  /** A timestamptz as row_to_json writes it in the export's session (the JVM's zone, which the driver sets). */
  static String pgTime(Instant t) {
    return java.time.format.DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ssxxx")
        .format(t.atZone(java.time.ZoneId.systemDefault()));
  }

  @Test
  void theSuppressionListIsInEveryExportAsItsOwnFileNamedAndCheckedByTheManifest() throws Exception {
    String url = gateway.databaseUrl();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      st.execute("DELETE FROM suppressions"); // this test's entries only, whatever ran before it
    }
    Instant added = Instant.parse("2025-03-03T10:30:00Z");
    ArchiveRows.Suppression global = new ArchiveRows.Suppression(UUID.fromString("00000000-0000-4000-8000-000000000001"),
        "bounced@example.net", "global", "550 5.1.1 no such user", "invalid_recipient", "refusal", seeded.inRange().get(3),
        "550 5.1.1 <bounced@example.net>: \"unknown\" <b>user</b>", "suppression-feed", added,
        Instant.parse("2025-06-01T10:30:00Z"));
    ArchiveRows.Suppression user = new ArchiveRows.Suppression(UUID.fromString("00000000-0000-4000-8000-000000000002"),
        "\"<img src=x>\"@example.org", "user:alice", ArchiveRows.TRICKY, null, "operator", null, null, "alice",
        added.plusSeconds(1), Instant.parse("2026-03-03T00:00:00Z"));
    ArchiveRows.suppress(url, user);
    ArchiveRows.suppress(url, global);

    Path dir = GatewayHarness.tempDir("archive-");
    Manifest m = export(dir, "listed");
    Path list = dir.resolve("listed.suppressions.jsonl.gz");
    assertThat(m.suppressions().file()).isEqualTo("listed.suppressions.jsonl.gz");
    assertThat(m.suppressions().rows()).isEqualTo(2);
    assertThat(m.suppressions().bytes()).isEqualTo(Files.size(list));
    assertThat(Files.getPosixFilePermissions(list)).isEqualTo(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    assertThat(new JsonObject(Files.readString(dir.resolve("listed.manifest.json"))).getJsonObject("suppressions"))
        .as("named and checksummed in the manifest").isEqualTo(new JsonObject().put("file", "listed.suppressions.jsonl.gz")
            .put("rows", 2).put("sha256", m.suppressions().sha256()).put("bytes", Files.size(list)));
    // By scope, then address; every column the table has, and nothing else (JSON escapes as PostgreSQL writes them).
    assertThat(textLines(list)).containsExactly(
        "{\"table\":\"suppressions\",\"row\":{\"id\":\"00000000-0000-4000-8000-000000000001\","
            + "\"address\":\"bounced@example.net\",\"scope\":\"global\",\"reason\":\"550 5.1.1 no such user\","
            + "\"category\":\"invalid_recipient\",\"source\":\"refusal\",\"message_id\":\"" + seeded.inRange().get(3) + "\","
            + "\"reply\":\"550 5.1.1 <bounced@example.net>: \\\"unknown\\\" <b>user</b>\",\"added_by\":\"suppression-feed\","
            + "\"added_at\":\"" + pgTime(added) + "\",\"expires_at\":\"" + pgTime(global.expiresAt()) + "\"}}",
        "{\"table\":\"suppressions\",\"row\":{\"id\":\"00000000-0000-4000-8000-000000000002\","
            + "\"address\":\"\\\"<img src=x>\\\"@example.org\",\"scope\":\"user:alice\",\"reason\":"
            + new io.vertx.core.json.JsonArray().add(ArchiveRows.TRICKY).encode().replaceAll("^\\[|\\]$", "")
            + ",\"category\":null,\"source\":\"operator\",\"message_id\":null,\"reply\":null,\"added_by\":\"alice\","
            + "\"added_at\":\"" + pgTime(user.addedAt()) + "\",\"expires_at\":\"" + pgTime(user.expiresAt()) + "\"}}");
    Verification ok = verify(list);
    assertThat(ok.outcome()).as(ok.line()).isEqualTo(Verification.Outcome.OK);
    assertThat(ok.line()).contains("suppression list 2 entr(ies) in " + list);

    // An entry removed, the file gzipped again and its sha256 and size put into the manifest: not authentic.
    Path dir2 = GatewayHarness.tempDir("damaged-");
    for (String f : List.of("listed.jsonl.gz", "listed.suppressions.jsonl.gz", "listed.manifest.json")) {
      Files.copy(dir.resolve(f), dir2.resolve(f));
    }
    Path copy = dir2.resolve("listed.suppressions.jsonl.gz");
    byte[] original = Files.readAllBytes(copy);
    byte[] flipped = original.clone();
    flipped[flipped.length / 2] ^= 0x01;
    Files.write(copy, flipped);
    Verification damaged = verify(dir2.resolve("listed.jsonl.gz"));
    assertThat(damaged.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(damaged.line()).startsWith("checksum mismatch: the sha256 of " + copy);

    java.io.ByteArrayOutputStream oneLess = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream out = new java.util.zip.GZIPOutputStream(oneLess)) {
      out.write((textLines(list).get(1) + "\n").getBytes(StandardCharsets.UTF_8));
    }
    Files.write(copy, oneLess.toByteArray());
    Path manifest = dir2.resolve("listed.manifest.json");
    JsonObject json = new JsonObject(Files.readString(manifest));
    json.getJsonObject("suppressions").put("bytes", oneLess.size()).put("sha256", java.util.HexFormat.of()
        .formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(oneLess.toByteArray())));
    Files.writeString(manifest, json.encodePrettily());
    assertThat(verify(copy).line()).as("by the list's own name too").contains("is not authentic");
    resign(manifest); // one who holds the key: the count still tells
    Verification fewer = verify(manifest);
    assertThat(fewer.outcome()).isEqualTo(Verification.Outcome.MISMATCH);
    assertThat(fewer.line()).isEqualTo("suppressions: 1 row(s) in " + copy + ", the manifest says 2");

    Files.delete(copy);
    Verification gone = verify(manifest);
    assertThat(gone.outcome()).isEqualTo(Verification.Outcome.UNREADABLE);
    assertThat(gone.line()).isEqualTo("no " + copy + " beside its manifest " + manifest);
    JsonObject without = new JsonObject(Files.readString(manifest));
    without.remove("suppressions");
    Files.writeString(manifest, without.encodePrettily());
    assertThat(verify(manifest).line()).as("a manifest without the list is not the one written").contains("is not authentic");
  }

  @Test
  void aFormat2ManifestWithoutTheListStillVerifies() throws Exception {
    Path gz = copyOfExport();
    Path manifest = gz.resolveSibling("d.manifest.json");
    JsonObject v2 = new JsonObject(Files.readString(manifest)).put("formatVersion", 2);
    v2.remove("suppressions");
    Files.writeString(manifest, v2.encodePrettily());
    resign(manifest);
    assertThat(new JsonObject(Files.readString(manifest)).getInteger("formatVersion")).isEqualTo(2);
    Verification v = verify(gz);
    assertThat(v.outcome()).as(v.line()).isEqualTo(Verification.Outcome.OK);
    assertThat(v.line()).doesNotContain("suppression list");
  }

  @Test
  void partitionedTablesExportByTheirParentNames() throws Exception {
    String url = TestDatabase.newEmptyDatabase();
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      st.execute("""
          CREATE TABLE messages (id uuid PRIMARY KEY, status text NOT NULL, mail_from text NOT NULL,
            received_at timestamptz NOT NULL) PARTITION BY RANGE (id);
          CREATE TABLE recipients (message_id uuid NOT NULL, idx integer NOT NULL, address text NOT NULL,
            PRIMARY KEY (message_id, idx)) PARTITION BY RANGE (message_id);
          CREATE TABLE reconcile_proposals (id bigint PRIMARY KEY, message_id uuid NOT NULL);
          CREATE TABLE resolutions (message_id uuid PRIMARY KEY, note text);
          CREATE TABLE stale_raises (message_id uuid PRIMARY KEY, raises integer);
          CREATE TABLE resubmissions (seq bigint PRIMARY KEY, message_id uuid NOT NULL);
          """);
      Instant week2 = START.plus(Duration.ofMinutes(30));
      for (String table : List.of("messages", "recipients")) {
        st.execute("CREATE TABLE " + table + "_w1 PARTITION OF " + table + " FOR VALUES FROM (MINVALUE) TO ('"
            + LedgerIds.lowest(week2) + "')");
        st.execute("CREATE TABLE " + table + "_w2 PARTITION OF " + table + " FOR VALUES FROM ('" + LedgerIds.lowest(week2)
            + "') TO (MAXVALUE)");
      }
      // Rows on both sides of the partition bound, one before the range, one after.
      List<Instant> times = List.of(START.minusSeconds(1), START, START.plus(Duration.ofMinutes(45)), START.plus(Duration.ofHours(2)));
      for (int i = 0; i < times.size(); i++) {
        UUID id = ArchiveRows.id(times.get(i), i);
        st.execute("INSERT INTO messages VALUES ('" + id + "', 'SENT', 'p" + i + "@example.com', '" + times.get(i) + "')");
        st.execute("INSERT INTO recipients VALUES ('" + id + "', 0, 'r@example.net'), ('" + id + "', 1, 's@example.net')");
        st.execute("INSERT INTO resolutions VALUES ('" + id + "', 'n" + i + "')");
      }
    }
    Path dir = GatewayHarness.tempDir("archive-");
    DatabaseTarget target = DatabaseTarget.fromUrl(url, Duration.ofSeconds(1));
    Manifest m = await(LedgerArchive.export(gateway.vertx(), target, KEY, dir, FROM, TO, "partitioned", "node-p"));

    assertThat(m.rows()).containsExactlyEntriesOf(orderedCounts(2, 4, 0, 2, 0, 0));
    assertThat(m.schemaVersion()).as("no Flyway history in this database").isNull();
    assertThat(m.suppressions()).as("no suppression list in this database").isNull();
    assertThat(dir.resolve("partitioned.suppressions.jsonl.gz")).doesNotExist();
    assertThat(lines(dir.resolve("partitioned.jsonl.gz")).stream().filter(r -> r.getString("table").equals("messages"))
        .map(r -> r.getJsonObject("row").getString("mail_from")).toList()).containsExactly("p1@example.com", "p2@example.com");
    Verification v = verify(dir.resolve("partitioned.manifest.json"));
    assertThat(v.outcome()).as(v.line()).isEqualTo(Verification.Outcome.OK);
  }

  static Map<String, Long> orderedCounts(long messages, long recipients, long proposals, long resolutions, long raises,
      long resubmissions) {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("messages", messages);
    m.put("recipients", recipients);
    m.put("reconcile_proposals", proposals);
    m.put("resolutions", resolutions);
    m.put("stale_raises", raises);
    m.put("resubmissions", resubmissions);
    return m;
  }
}
