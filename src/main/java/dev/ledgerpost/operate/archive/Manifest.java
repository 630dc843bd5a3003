package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * What an export holds, written beside it as {@code <name>.manifest.json} (docs/data-model.md §5.13): enough to check the
 * file without the database that wrote it, and to know which rows it stands for once they are dropped.
 *
 * @param fromId inclusive, {@code toId} exclusive: the message-id range (UUIDv7, so a time range too)
 * @param receivedFrom the earliest {@code received_at} among the exported messages, null when there were none
 * @param rows rows per table, in the file's order
 * @param schemaVersion the ledger's Flyway version when it was written (null if the database had no Flyway history)
 * @param ledgerId the ledger that wrote it ({@code ledger_identity}, V96): which ledger's rows these are, when several
 *     write into one archive directory; null in format 1 and for a database without that table
 * @param erasures the erasures recorded when it was written ({@code count(*)} of {@code erasures}, an append-only
 *     table): an export that saw fewer than the ledger has now may hold an address the ledger no longer does
 * @param keyId the {@link ArchiveKey} the manifest is authenticated under, and {@code mac} its HMAC-SHA256 of
 *     {@link #signedText()}; both null in format 1, which carried no MAC
 * @param suppressions the suppression list as it was in the rows' snapshot, a file of its own beside the export (format
 *     3); null before format 3 and for a database without that table
 */
public record Manifest(int formatVersion, String name, String file, UUID fromId, UUID toId, Instant receivedFrom,
    Instant receivedTo, Map<String, Long> rows, String sha256, long bytes, Instant createdAt, String node,
    String schemaVersion, UUID ledgerId, Long erasures, String keyId, String mac, Part suppressions) {
  public static final String FORMAT = "ledgerpost-ledger-export";
  /**
   * 3: with the suppression list's file. 2 (the ledger id, the erasures seen, the MAC) is still read and verified; 1 is
   * read and reported as not authenticated.
   */
  public static final int FORMAT_VERSION = 3;
  static final int UNSIGNED_VERSION = 1;
  static final int WITHOUT_SUPPRESSIONS_VERSION = 2;
  /** The suppression list's file: {@code <name>.suppressions.jsonl.gz}, beside the export. */
  public static final String SUPPRESSIONS_SUFFIX = ".suppressions.jsonl.gz";

  /** A file beside the export that is not the ledger's rows: its name, rows, SHA-256 and size. */
  public record Part(String file, long rows, String sha256, long bytes) {
    JsonObject toJson() {
      return new JsonObject().put("file", file).put("rows", rows).put("sha256", sha256).put("bytes", bytes);
    }

    static Part fromJson(JsonObject json) {
      if (json == null) {
        throw new IllegalArgumentException("manifest has no suppressions");
      }
      return new Part(required(json, "file"), json.getLong("rows"), required(json, "sha256"), json.getLong("bytes"));
    }
  }
  /** What the MAC is of, ahead of the manifest's JSON: a MAC of anything else never passes for one of a manifest. */
  private static final String MAC_CONTEXT = FORMAT + " manifest\n";
  public static final String SUFFIX = ".manifest.json";
  public static final String DATA_SUFFIX = ".jsonl.gz";

  public Manifest {
    rows = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(rows));
  }

  public long totalRows() {
    return rows.values().stream().mapToLong(Long::longValue).sum();
  }

  public JsonObject toJson() {
    JsonObject counts = new JsonObject();
    rows.forEach(counts::put);
    JsonObject json = new JsonObject()
        .put("format", FORMAT)
        .put("formatVersion", formatVersion)
        .put("name", name)
        .put("file", file)
        .put("fromId", fromId.toString())
        .put("toId", toId.toString())
        .put("fromTime", LedgerIds.instant(fromId).toString())
        .put("toTime", LedgerIds.instant(toId).toString())
        .put("receivedFrom", receivedFrom == null ? null : receivedFrom.toString())
        .put("receivedTo", receivedTo == null ? null : receivedTo.toString())
        .put("rows", counts)
        .put("sha256", sha256)
        .put("bytes", bytes)
        .put("createdAt", createdAt.toString())
        .put("node", node)
        .put("schemaVersion", schemaVersion)
        .put("ledgerId", ledgerId == null ? null : ledgerId.toString())
        .put("erasures", erasures)
        .put("keyId", keyId)
        .put("mac", mac);
    // Only when there is one: a format 2 manifest's signed text stays what it was, so its MAC still checks.
    if (suppressions != null) {
      json.put("suppressions", suppressions.toJson());
    }
    return json;
  }

  /**
   * What the MAC covers: every member but the MAC itself, in {@link #toJson}'s fixed order, compact. Computed from the
   * parsed values, not from the file's text, so the layout of the file does not matter and every value does.
   */
  public String signedText() {
    JsonObject json = toJson();
    json.remove("mac");
    return MAC_CONTEXT + json.encode();
  }

  /** This manifest, authenticated under {@code key}. */
  public Manifest signed(ArchiveKey key) {
    int version = suppressions == null && formatVersion == WITHOUT_SUPPRESSIONS_VERSION ? formatVersion : FORMAT_VERSION;
    Manifest withId = new Manifest(version, name, file, fromId, toId, receivedFrom, receivedTo, rows, sha256, bytes,
        createdAt, node, schemaVersion, ledgerId, erasures, key.id(), null, suppressions);
    return new Manifest(version, name, file, fromId, toId, receivedFrom, receivedTo, rows, sha256, bytes, createdAt,
        node, schemaVersion, ledgerId, erasures, key.id(), key.mac(withId.signedText()), suppressions);
  }

  /** A manifest as {@link #toJson} wrote it; anything else is an {@link IllegalArgumentException} saying what. */
  public static Manifest fromJson(JsonObject json) {
    try {
      if (!FORMAT.equals(json.getString("format"))) {
        throw new IllegalArgumentException("not a ledger export manifest (format is " + json.getValue("format") + ")");
      }
      int version = json.getInteger("formatVersion");
      if (version != FORMAT_VERSION && version != WITHOUT_SUPPRESSIONS_VERSION && version != UNSIGNED_VERSION) {
        throw new IllegalArgumentException("format version " + version + " is not known to this version (" + FORMAT_VERSION + ")");
      }
      Map<String, Long> rows = new LinkedHashMap<>();
      JsonObject counts = json.getJsonObject("rows");
      for (String table : counts.fieldNames()) {
        rows.put(table, counts.getLong(table));
      }
      return new Manifest(version, required(json, "name"), required(json, "file"), UUID.fromString(required(json, "fromId")),
          UUID.fromString(required(json, "toId")), instant(json.getString("receivedFrom")), instant(json.getString("receivedTo")),
          rows, required(json, "sha256"), json.getLong("bytes"), Instant.parse(required(json, "createdAt")),
          json.getString("node"), json.getString("schemaVersion"),
          version == UNSIGNED_VERSION ? null : uuid(json.getString("ledgerId")),
          version == UNSIGNED_VERSION ? null : json.getLong("erasures"),
          version == UNSIGNED_VERSION ? null : required(json, "keyId"),
          version == UNSIGNED_VERSION ? null : required(json, "mac"),
          version == FORMAT_VERSION && json.containsKey("suppressions") ? Part.fromJson(json.getJsonObject("suppressions"))
              : null);
    } catch (ClassCastException | NullPointerException | java.time.format.DateTimeParseException e) {
      throw new IllegalArgumentException("manifest member missing or of the wrong type: " + e.getMessage(), e);
    }
  }

  private static String required(JsonObject json, String member) {
    String v = json.getString(member);
    if (v == null) {
      throw new IllegalArgumentException("manifest has no " + member);
    }
    return v;
  }

  private static UUID uuid(String s) {
    return s == null ? null : UUID.fromString(s);
  }

  private static Instant instant(String s) {
    return s == null ? null : Instant.parse(s);
  }
}
