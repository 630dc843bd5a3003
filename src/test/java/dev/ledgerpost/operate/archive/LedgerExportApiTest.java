package dev.ledgerpost.operate.archive;

import static dev.ledgerpost.testing.CommandLineRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.CommandLineRun;
import dev.ledgerpost.testing.GatewayHarness;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code POST /api/v1/ledger/exports} and {@code ledgerpost ledger export|verify} against a running gateway. */
class LedgerExportApiTest {
  static final Instant START = Instant.parse("2025-06-02T08:00:00Z");
  static final Path ARCHIVE = GatewayHarness.tempDir("archive-dir-");
  /** The gateway's archive key, configured (a configured file is never generated: it must be there). */
  static final Path KEY_FILE = keyFile();

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("ledger.archiveDir", ARCHIVE.toString())
      .with("ledger.archiveKeyFile", KEY_FILE.toString());

  static Path keyFile() {
    Path file = GatewayHarness.tempDir("archive-key-").resolve("archive-key");
    try {
      Files.writeString(file, "0123456789abcdef".repeat(4) + "\n");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return file;
  }

  @BeforeAll
  static void seed() throws Exception {
    ArchiveRows.seed(gateway.databaseUrl(), START);
  }

  static String range(String from, String to) {
    return new JsonObject().put("from", from).put("to", to).encode();
  }

  String api() {
    return "http://127.0.0.1:" + gateway.httpPort();
  }

  @Test
  void anExportIsWrittenIntoTheArchiveDirectoryAnsweredWithItsManifestAndNeverTwice() throws Exception {
    HttpResponse<String> created = gateway.post("/api/v1/ledger/exports", range("2025-06-02T08:00:00Z", "2025-06-02T10:00:00+01:00"));
    assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    JsonObject body = new JsonObject(created.body());
    assertThat(body.getString("name")).isEqualTo("ledger-20250602T080000Z-20250602T090000Z");
    assertThat(Manifest.fromJson(body).rows()).containsExactlyEntriesOf(LedgerArchiveTest.orderedCounts(7, 14, 2, 2, 1, 1));
    Path data = ARCHIVE.resolve("ledger-20250602T080000Z-20250602T090000Z.jsonl.gz");
    assertThat(body.getString("path")).isEqualTo(data.toString());
    assertThat(body.getString("fromTime")).isEqualTo("2025-06-02T08:00:00Z");
    assertThat(body.getString("toTime")).isEqualTo("2025-06-02T09:00:00Z");
    assertThat(LedgerArchive.verify(data, new ArchiveKey.Location(KEY_FILE, false).load()).ok()).isTrue();

    HttpResponse<String> again = gateway.post("/api/v1/ledger/exports", range("2025-06-02T08:00:00Z", "2025-06-02T09:00:00Z"));
    assertThat(again.statusCode()).isEqualTo(409);
    assertThat(again.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(new JsonObject(again.body()).getString("reason")).isEqualTo("EXISTS");
    assertThat(new JsonObject(again.body()).getString("detail")).contains(data + " exists");
  }

  @Test
  void aRangeThatIsEmptyOrNotTimesIsA400Problem() throws Exception {
    HttpResponse<String> reversed = gateway.post("/api/v1/ledger/exports", range("2025-06-02T09:00:00Z", "2025-06-02T08:00:00Z"));
    assertThat(reversed.statusCode()).isEqualTo(400);
    assertThat(new JsonObject(reversed.body()).getString("detail")).contains("must be before");
    HttpResponse<String> same = gateway.post("/api/v1/ledger/exports", range("2025-06-02T09:00:00Z", "2025-06-02T10:00:00+01:00"));
    assertThat(same.statusCode()).isEqualTo(400);
    HttpResponse<String> notTime = gateway.post("/api/v1/ledger/exports", range("yesterday", "2025-06-02T08:00:00Z"));
    assertThat(notTime.statusCode()).isEqualTo(400);
    assertThat(new JsonObject(notTime.body()).getString("detail")).contains("from must be an ISO-8601 timestamp");
    HttpResponse<String> extra = gateway.post("/api/v1/ledger/exports",
        new JsonObject().put("from", "2025-06-02T08:00:00Z").put("to", "2025-06-02T09:00:00Z").put("drop", true).encode());
    assertThat(extra.statusCode()).as("the contract refuses members it does not list").isEqualTo(400);
    HttpResponse<String> missing = gateway.post("/api/v1/ledger/exports", new JsonObject().put("from", "2025-06-02T08:00:00Z").encode());
    assertThat(missing.statusCode()).isEqualTo(400);
    try (var listing = Files.list(ARCHIVE)) {
      assertThat(listing.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains("20250602T090000Z-2025"));
    }
  }

  @Test
  void withoutAnArchiveDirectoryExportsAreRefusedWithA409() throws Exception {
    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    // Its own Vert.x: two gateways on one event bus would share the archive part's address.
    io.vertx.core.Vertx own = io.vertx.core.Vertx.vertx();
    try (GatewayHarness plain = GatewayHarness.start(own, config)) {
      HttpResponse<String> refused = plain.post("/api/v1/ledger/exports", range("2025-06-02T08:00:00Z", "2025-06-02T09:00:00Z"));
      assertThat(refused.statusCode()).isEqualTo(409);
      JsonObject problem = new JsonObject(refused.body());
      assertThat(problem.getString("reason")).isEqualTo("NO_ARCHIVE_DIR");
      assertThat(problem.getString("detail")).contains("ledger.archiveDir is not set");

      CommandLineRun cli = run("ledger", "export", "--from", "2025-06-02T08:00:00Z", "--to", "2025-06-02T09:00:00Z",
          "--api", "http://127.0.0.1:" + plain.httpPort(), "--token", "test-admin-token");
      assertThat(cli.exit()).isEqualTo(1);
      assertThat(cli.err()).contains("409 Conflict: ledger.archiveDir is not set");
    } finally {
      GatewayHarness.await(own.close());
    }
  }

  @Test
  void theCommandLineExportsThroughTheApiAndVerifiesLocallyWithAnExitStatusPerOutcome() throws Exception {
    CommandLineRun export = run("ledger", "export", "--from", "2025-06-02T08:30:00Z", "--to", "2025-06-02T08:31:00Z",
        "--api", api(), "--token", "test-admin-token");
    assertThat(export.exit()).as(export.err()).isZero();
    Path data = ARCHIVE.resolve("ledger-20250602T083000Z-20250602T083100Z.jsonl.gz");
    assertThat(export.out()).contains("exported 0 row(s)", data.toString());
    assertThat(export.out()).as("the list beside it").contains("suppression list: 0 entr(ies) in "
        + ARCHIVE.resolve("ledger-20250602T083000Z-20250602T083100Z.suppressions.jsonl.gz"));

    CommandLineRun whole = run("ledger", "export", "--from", "2025-06-02T07:00:00Z", "--to", "2025-06-02T08:03:30Z",
        "--api", api(), "--token", "test-admin-token");
    assertThat(whole.exit()).as(whole.err()).isZero();
    assertThat(whole.out()).contains("exported 17 row(s)");
    // 08:00 to 08:03:30: four messages of the hour and the one just before it, 2 + 2 + 2 + 2 + 1 recipients, 2 raises,
    // the SENT one's resubmission.
    Path four = ARCHIVE.resolve("ledger-20250602T070000Z-20250602T080330Z.jsonl.gz");

    CommandLineRun ok = run("ledger", "verify", "--key-file", KEY_FILE.toString(), four.toString());
    assertThat(ok.exit()).as(ok.err()).isZero();
    assertThat(ok.out()).startsWith("OK " + four).contains("17 row(s)");

    CommandLineRun twice = run("ledger", "export", "--from", "2025-06-02T08:30:00Z", "--to", "2025-06-02T08:31:00Z",
        "--api", api(), "--token", "test-admin-token");
    assertThat(twice.exit()).isEqualTo(1);
    assertThat(twice.err()).contains("409 Conflict", "exists");

    Path damaged = GatewayHarness.tempDir("damaged-");
    Files.copy(four, damaged.resolve(four.getFileName()));
    Path manifest = ARCHIVE.resolve("ledger-20250602T070000Z-20250602T080330Z.manifest.json");
    Files.copy(manifest, damaged.resolve(manifest.getFileName()));
    byte[] b = Files.readAllBytes(damaged.resolve(four.getFileName()));
    b[b.length - 5] ^= 0x40;
    Files.write(damaged.resolve(four.getFileName()), b);
    CommandLineRun bad = run("ledger", "verify", "--key-file", KEY_FILE.toString(), damaged.resolve(manifest.getFileName()).toString());
    assertThat(bad.exit()).isEqualTo(1);
    assertThat(bad.err().strip()).startsWith("MISMATCH checksum mismatch").doesNotContain("\n");

    CommandLineRun absent = run("ledger", "verify", damaged.resolve("nothing.jsonl.gz").toString());
    assertThat(absent.exit()).isEqualTo(2);
    assertThat(absent.err()).contains("no manifest");
    assertThat(run("ledger", "verify", "--key-file", KEY_FILE.toString(), "notes.txt").exit()).isEqualTo(2);
    assertThat(run("ledger", "verify").exit()).as("usage").isEqualTo(2);
    assertThat(run("ledger", "export", "--from", "2025-06-02T08:30:00Z").exit()).as("usage").isEqualTo(2);
  }

  /**
   * {@code ledger verify} on an export rewritten by someone who can write to the archive: rows edited, the manifest's
   * SHA-256 and size recomputed. The MAC under the archive key tells it from the ledger's. Without the key, an
   * untouched export is not reported OK either: the command says it could not authenticate it, and where it looked.
   */
  @Test
  void theCommandLineRefusesARewrittenExportAndSaysWhenItHasNoKey() throws Exception {
    HttpResponse<String> created = gateway.post("/api/v1/ledger/exports", range("2025-06-02T08:00:00Z", "2025-06-02T08:10:00Z"));
    assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    Path data = ARCHIVE.resolve("ledger-20250602T080000Z-20250602T081000Z.jsonl.gz");
    Path copy = GatewayHarness.tempDir("rewritten-").resolve(data.getFileName());
    Files.copy(data, copy);
    Files.copy(ARCHIVE.resolve("ledger-20250602T080000Z-20250602T081000Z.manifest.json"),
        copy.resolveSibling("ledger-20250602T080000Z-20250602T081000Z.manifest.json"));
    Files.copy(ARCHIVE.resolve("ledger-20250602T080000Z-20250602T081000Z.suppressions.jsonl.gz"),
        copy.resolveSibling("ledger-20250602T080000Z-20250602T081000Z.suppressions.jsonl.gz"));

    CommandLineRun untouched = run("ledger", "verify", "--key-file", KEY_FILE.toString(), copy.toString());
    assertThat(untouched.exit()).as(untouched.err()).isZero();
    assertThat(untouched.out()).startsWith("OK " + copy).contains("manifest authenticated");

    // No key: a configuration whose data directory holds none.
    Path config = GatewayHarness.tempDir("conf-").resolve("gateway.yaml");
    Files.writeString(config, "ledger:\n  dataDir: " + GatewayHarness.tempDir("data-").resolve("pg") + "\n");
    CommandLineRun noKey = run("ledger", "verify", "-c", config.toString(), copy.toString());
    assertThat(noKey.exit()).isEqualTo(3);
    assertThat(noKey.err().strip()).startsWith("NOT AUTHENTICATED " + copy).contains("no archive key", "archive-key does not exist")
        .doesNotContain("\n");

    LedgerArchiveTest.rewrite(copy, rows -> LedgerArchiveTest.firstOf(rows, "messages").put("status", "RESOLVED_DELIVERED"));
    CommandLineRun rewritten = run("ledger", "verify", "--key-file", KEY_FILE.toString(), copy.toString());
    assertThat(rewritten.exit()).isEqualTo(1);
    assertThat(rewritten.err().strip()).startsWith("MISMATCH manifest ").contains("is not authentic").doesNotContain("\n");
  }
}
