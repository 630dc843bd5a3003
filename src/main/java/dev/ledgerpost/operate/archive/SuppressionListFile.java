package dev.ledgerpost.operate.archive;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.util.HexFormat;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipException;
import org.postgresql.copy.CopyManager;

/**
 * The suppression list's file beside an export, {@code <name>.suppressions.jsonl.gz} (docs/data-model.md §5.13): the
 * list is of no message-id range, so it is not among the export's rows (whose check refuses a row outside the range)
 * but whole in a file of its own, written from the same snapshot and described by the manifest's {@code suppressions}.
 */
final class SuppressionListFile {
  /** The table (docs/data-model.md §5.16), and each line's {@code table}. */
  static final String TABLE = "suppressions";

  private SuppressionListFile() {}

  /** The suppression list through gzip into {@code list}, fsynced, as {@code file}. */
  static Manifest.Part write(CopyManager copy, FileChannel list, String file) throws IOException, SQLException {
    MessageDigest sha = sha256();
    BufferedOutputStream out = new BufferedOutputStream(new DigestOutputStream(Channels.newOutputStream(list), sha), 1 << 16);
    try (GZIPOutputStream gz = new GZIPOutputStream(out, 1 << 16)) { // closing it closes the channel
      long rows = copy.copyOut(copySql(), gz);
      gz.finish();
      out.flush();
      list.force(true);
      return new Manifest.Part(file, rows, HexFormat.of().formatHex(sha.digest()), list.size());
    }
  }

  /**
   * The list's lines, {@code {"table":"suppressions","row":<row_to_json>}} by scope and address (its unique key), with
   * COPY as in {@link LedgerArchive#copySql}: every column the table holds, and nothing else.
   */
  static String copySql() {
    return "COPY (SELECT '{\"table\":\"" + TABLE + "\",\"row\":' || row_to_json(t)::text || '}' FROM " + TABLE
        + " t ORDER BY scope, address) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')";
  }

  /**
   * The file against its part of the manifest: size, SHA-256 (over every byte, read to the end as the export's own
   * check does), that it decompresses, that each line is a {@code suppressions} row with an address, and the count.
   * Null when it matches, else one line saying what does not.
   */
  static String check(Path file, Manifest.Part part) throws IOException {
    long size = Files.size(file);
    if (size != part.bytes()) {
      return file + " is " + size + " bytes, the manifest says " + part.bytes() + (size < part.bytes() ? " (truncated)" : "");
    }
    MessageDigest sha = sha256();
    long rows = 0;
    String damage = null;
    try (InputStream raw = new DigestInputStream(Files.newInputStream(file), sha)) {
      try {
        BufferedReader lines = new BufferedReader(new InputStreamReader(new GZIPInputStream(raw, 1 << 16),
            StandardCharsets.UTF_8.newDecoder()), 1 << 16);
        for (String line = lines.readLine(); line != null && damage == null; line = lines.readLine()) {
          rows++;
          damage = notAnEntry(line, rows);
        }
      } catch (ZipException | java.io.EOFException | java.nio.charset.CharacterCodingException e) {
        damage = "does not decompress to its end: " + e.getMessage();
      }
      raw.transferTo(OutputStream.nullOutputStream());
    }
    String digest = HexFormat.of().formatHex(sha.digest());
    if (!digest.equalsIgnoreCase(part.sha256())) {
      return "checksum mismatch: the sha256 of " + file + " is " + digest + ", the manifest says " + part.sha256();
    }
    if (damage != null) {
      return file + ": " + damage;
    }
    return rows == part.rows() ? null : TABLE + ": " + rows + " row(s) in " + file + ", the manifest says " + part.rows();
  }

  private static String notAnEntry(String line, long n) {
    try {
      JsonObject json = new JsonObject(line);
      JsonObject row = json.getJsonObject("row");
      if (!TABLE.equals(json.getString("table")) || row == null || row.getString("address") == null) {
        return "line " + n + " is not a {\"table\": \"" + TABLE + "\", \"row\"} object with an address";
      }
      return null;
    } catch (DecodeException | ClassCastException e) {
      return "line " + n + " is not JSON: " + e.getMessage();
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
