package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.config.PrivateFiles;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.ledger.Partitions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
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
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipException;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every ledger row of a message-id range written as one gzip-compressed JSON Lines file with a manifest beside it
 * (docs/data-model.md §5.13), and the check of such a file. The rows are PostgreSQL's own {@code row_to_json}, streamed
 * with {@code COPY ... TO STDOUT} from one repeatable-read snapshot, so the file says exactly what the ledger held at
 * one instant, column for column, whatever the Java side knows of the schema. Rows are selected by id range from the
 * parent tables, so a plain table and a partitioned one export alike.
 *
 * <p>Blocking work (JDBC, files) runs on a worker pool of its own, never on an event loop: an export of a week of
 * ledger can take minutes, far beyond the default worker pool's blocked-thread warning, and one at a time is enough.
 */
public final class LedgerArchive {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerArchive.class);
  /** One export or check at a time per process: they read and write whole files, and are rare. */
  private static final String POOL = "ledgerpost-archive";
  private static final long MAX_EXECUTE_HOURS = 24;
  /** A file name of the archive directory: no separators, no leading dot (the temporary files have one). */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9._-]{0,199}");

  /** One ledger table in the file: its name, the column holding the message id, and the order of its rows. */
  record Table(String name, String messageColumn, String order) {}

  /**
   * The tables, in the file's order: a row's foreign keys point only at rows earlier in the file (a resolution may name
   * the proposal it accepted), so the file loads back in one pass.
   */
  static final List<Table> TABLES = List.of(
      new Table("messages", "id", "id"),
      new Table("recipients", "message_id", "message_id, idx"),
      new Table("reconcile_proposals", "message_id", "id"),
      new Table("resolutions", "message_id", "message_id"),
      new Table("stale_raises", "message_id", "message_id"),
      new Table("resubmissions", "message_id", "seq"));

  private LedgerArchive() {}

  /**
   * Writes {@code <dir>/<name>.jsonl.gz} and {@code <dir>/<name>.manifest.json} for the messages with {@code fromId <= id <
   * toId} and their rows, on a worker, the manifest authenticated under the key at {@code key}. Fails with
   * {@link ArchiveRefused} (nothing written) for an empty or reversed range, a bad name, or when either file exists;
   * with a {@link dev.ledgerpost.platform.config.ConfigException} when there is no usable key; with the cause for a database or
   * file-system failure (the temporary files are removed).
   */
  public static Future<Manifest> export(Vertx vertx, DatabaseTarget target, ArchiveKey.Location key, Path dir, UUID fromId,
      UUID toId, String name, String nodeId) {
    return onWorker(vertx, () -> export(target, key, dir, fromId, toId, name, nodeId, Clock.systemUTC()));
  }

  /** {@link #verify(Path, ArchiveKey)} on a worker, with the key at {@code key} (fails when it cannot be read). */
  public static Future<Verification> verify(Vertx vertx, Path file, ArchiveKey.Location key) {
    return onWorker(vertx, () -> verify(file, key.load()));
  }

  private static <T> Future<T> onWorker(Vertx vertx, java.util.concurrent.Callable<T> work) {
    WorkerExecutor pool = vertx.createSharedWorkerExecutor(POOL, 1, MAX_EXECUTE_HOURS, TimeUnit.HOURS);
    return pool.executeBlocking(work, true).eventually(pool::close);
  }

  /** The blocking export; see {@link #export(Vertx, DatabaseTarget, ArchiveKey.Location, Path, UUID, UUID, String, String)}. */
  static Manifest export(DatabaseTarget target, ArchiveKey.Location keyFile, Path dir, UUID fromId, UUID toId, String name,
      String nodeId, Clock clock) throws IOException, SQLException {
    if (Partitions.compare(fromId, toId) >= 0) {
      throw ArchiveRefused.emptyRange(LedgerIds.instant(fromId), LedgerIds.instant(toId), ", id " + fromId + " and " + toId);
    }
    if (!NAME.matcher(name).matches()) {
      throw ArchiveRefused.badName(name);
    }
    PrivateFiles.createDirectories(dir); // an export holds addresses: 0700 directories, 0600 files from the first byte
    Path data = dir.resolve(name + Manifest.DATA_SUFFIX);
    Path listFile = dir.resolve(name + Manifest.SUPPRESSIONS_SUFFIX);
    Path manifestFile = dir.resolve(name + Manifest.SUFFIX);
    refuseExisting(data);
    refuseExisting(listFile);
    refuseExisting(manifestFile);
    // Before anything is written: an export that cannot be authenticated is not made at all.
    ArchiveKey key = keyFile.load();
    Path partialData = dir.resolve("." + name + Manifest.DATA_SUFFIX + ".partial");
    Path partialList = dir.resolve("." + name + Manifest.SUPPRESSIONS_SUFFIX + ".partial");
    Path partialManifest = dir.resolve("." + name + Manifest.SUFFIX + ".partial");
    FileChannel channel;
    try {
      // CREATE_NEW: two exports of one name never write one file; the second is refused here.
      channel = PrivateFiles.open(partialData, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    } catch (FileAlreadyExistsException e) {
      throw ArchiveRefused.exists(partialData, ": an export named " + name + " is being written now, or one that stopped "
          + "half way left this file (remove it and try again)");
    }
    boolean done = false;
    try {
      Manifest manifest;
      boolean withList;
      try (channel; FileChannel list = openList(partialList, name)) {
        manifest = write(target, channel, list, fromId, toId, name, nodeId, clock).signed(key);
        withList = manifest.suppressions() != null;
      }
      if (!withList) {
        Files.deleteIfExists(partialList); // a database without the list: no file for it
      }
      PrivateFiles.writeNew(partialManifest, (manifest.toJson().encodePrettily() + "\n").getBytes(StandardCharsets.UTF_8));
      // The data first, then the manifest: a manifest under its final name always has its whole files beside it.
      publish(partialData, data);
      if (withList) {
        publish(partialList, listFile);
      }
      publish(partialManifest, manifestFile);
      force(dir);
      done = true;
      LOG.info("ledger export {}: {} row(s) {} of messages [{}, {}), {} bytes, sha256 {}; suppression list {}", data,
          manifest.totalRows(), manifest.rows(), fromId, toId, manifest.bytes(), manifest.sha256(),
          withList ? manifest.suppressions().rows() + " entr(ies) in " + listFile : "(no such table)");
      return manifest;
    } finally {
      if (!done) {
        Files.deleteIfExists(partialData);
        Files.deleteIfExists(partialList);
        Files.deleteIfExists(partialManifest);
      }
    }
  }

  private static FileChannel openList(Path partialList, String name) throws IOException {
    try {
      return PrivateFiles.open(partialList, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    } catch (FileAlreadyExistsException e) {
      throw ArchiveRefused.exists(partialList, ": an export named " + name + " is being written now, or one that stopped "
          + "half way left this file (remove it and try again)");
    }
  }

  /**
   * The rows, from one snapshot, through gzip into {@code channel}, and the suppression list into {@code list}, both
   * fsynced; the manifest that describes them (its {@code suppressions} null, and {@code list} left empty, when the
   * database has no such table).
   */
  private static Manifest write(DatabaseTarget target, FileChannel channel, FileChannel list, UUID fromId, UUID toId,
      String name, String nodeId, Clock clock) throws IOException, SQLException {
    MessageDigest sha = sha256();
    Map<String, Long> rows = new LinkedHashMap<>();
    Instant receivedFrom;
    Instant receivedTo;
    String schema;
    UUID ledgerId;
    Long erasures;
    long bytes;
    Manifest.Part suppressions = null;
    try (Connection c = connect(target)) {
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      c.setReadOnly(true);
      schema = schemaVersion(c);
      // In the same snapshot as the rows: which ledger they are, and which erasures they already reflect.
      ledgerId = exists(c, "ledger_identity") ? single(c, "SELECT ledger_id FROM ledger_identity", UUID.class) : null;
      erasures = exists(c, "erasures") ? single(c, "SELECT count(*) FROM erasures", Long.class) : null;
      CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
      BufferedOutputStream file = new BufferedOutputStream(new DigestOutputStream(Channels.newOutputStream(channel), sha),
          1 << 16);
      try (GZIPOutputStream gz = new GZIPOutputStream(file, 1 << 16)) { // closing it closes the channel
        for (Table t : TABLES) {
          rows.put(t.name(), copy.copyOut(copySql(t, fromId, toId), gz));
        }
        gz.finish();
        file.flush();
        channel.force(true);
        bytes = channel.size();
      }
      if (exists(c, SuppressionListFile.TABLE)) {
        // The same snapshot: the list beside the rows is the one of that instant, erasures already applied to both.
        suppressions = SuppressionListFile.write(copy, list, name + Manifest.SUPPRESSIONS_SUFFIX);
      }
      try (PreparedStatement st = c.prepareStatement(
          "SELECT min(received_at), max(received_at) FROM messages WHERE id >= ? AND id < ?")) {
        st.setObject(1, fromId);
        st.setObject(2, toId);
        try (ResultSet rs = st.executeQuery()) {
          rs.next();
          receivedFrom = instant(rs.getTimestamp(1));
          receivedTo = instant(rs.getTimestamp(2));
        }
      }
      c.commit();
    }
    return new Manifest(Manifest.FORMAT_VERSION, name, name + Manifest.DATA_SUFFIX, fromId, toId, receivedFrom, receivedTo,
        rows, HexFormat.of().formatHex(sha.digest()), bytes, clock.instant(), nodeId, schema, ledgerId, erasures, null, null,
        suppressions);
  }

  /**
   * One table's lines: {@code {"table":"<name>","row":<row_to_json>}}. COPY's text format would escape the backslashes
   * of the JSON, so it runs as CSV with a quote and a delimiter that JSON text never holds raw (PostgreSQL escapes every
   * control character in JSON as \\uXXXX): each value comes out verbatim, one line per row. The ids are UUIDs, whose
   * text is hex digits and dashes only, so they can stand in the statement (COPY takes no parameters).
   */
  static String copySql(Table t, UUID fromId, UUID toId) {
    return "COPY (SELECT '{\"table\":\"" + t.name() + "\",\"row\":' || row_to_json(t)::text || '}' FROM " + t.name()
        + " t WHERE t." + t.messageColumn() + " >= '" + fromId + "'::uuid AND t." + t.messageColumn() + " < '" + toId
        + "'::uuid ORDER BY " + t.order() + ") TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')";
  }

  /** The ledger's Flyway version, or null when the database has no Flyway history (checked first: an error would end the snapshot). */
  private static String schemaVersion(Connection c) throws SQLException {
    if (!exists(c, "flyway_schema_history")) {
      return null;
    }
    try (PreparedStatement st = c.prepareStatement("SELECT version FROM flyway_schema_history WHERE success AND version IS NOT "
        + "NULL ORDER BY installed_rank DESC LIMIT 1"); ResultSet rs = st.executeQuery()) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  /** Whether the table exists: asked first, because a statement that fails would end the snapshot. */
  private static boolean exists(Connection c, String table) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      st.setString(1, table);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  private static <T> T single(Connection c, String sql, Class<T> type) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(sql); ResultSet rs = st.executeQuery()) {
      return rs.next() ? rs.getObject(1, type) : null;
    }
  }

  private static Connection connect(DatabaseTarget target) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", target.options().getUser());
    p.setProperty("password", target.options().getPassword() == null ? "" : target.options().getPassword());
    p.setProperty("ApplicationName", "ledgerpost-archive");
    return DriverManager.getConnection(target.jdbcUrl(), p);
  }

  private static void refuseExisting(Path file) {
    if (Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      throw ArchiveRefused.exists(file, " exists; an export never replaces one");
    }
  }

  /** Without REPLACE_EXISTING: an existing file is a {@link FileAlreadyExistsException}, never overwritten. */
  private static void publish(Path partial, Path target) throws IOException {
    try {
      Files.move(partial, target);
    } catch (FileAlreadyExistsException e) {
      throw ArchiveRefused.exists(target, " appeared while the export was written; it was left alone and this export dropped");
    }
  }

  /** fsync of a file, or of a directory (its entries: the renames). */
  private static void force(Path path) throws IOException {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      if (!Files.isDirectory(path)) {
        throw e;
      }
      LOG.debug("cannot fsync directory {} on this file system: {}", path, e.toString());
    }
  }

  private static Instant instant(Timestamp t) {
    return t == null ? null : t.toInstant();
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * What {@link #verify} found: one line for the operator, and the manifest when it could be read. UNAUTHENTICATED:
   * the file matches its manifest, but nothing shows the manifest is the one the ledger wrote (no key here, another
   * key, or a format 1 manifest, which had no MAC); such an export is not taken as one.
   */
  public record Verification(Outcome outcome, String line, Manifest manifest) {
    public enum Outcome { OK, MISMATCH, UNREADABLE, UNAUTHENTICATED }

    public boolean ok() {
      return outcome == Outcome.OK;
    }
  }

  /**
   * Checks an export, given its {@code .jsonl.gz} or its {@code .manifest.json}: the manifest's MAC under {@code key}
   * (first: a manifest that is not authentic says nothing about the file), the file's size and SHA-256 against the
   * manifest, that it decompresses to its end, that every line is a {@code {"table", "row"}} object of a ledger table
   * whose message id lies in the manifest's range, and that the rows per table are the manifest's. {@code key} null:
   * none is available; everything else is checked, and a file that matches is {@code UNAUTHENTICATED}, never
   * {@code OK}. Blocking; never throws: an unreadable file is {@code UNREADABLE}, anything that does not match is
   * {@code MISMATCH}, each with one line saying what.
   */
  public static Verification verify(Path file, ArchiveKey key) {
    String fileName = file.getFileName() == null ? "" : file.getFileName().toString();
    Path manifestFile;
    if (fileName.endsWith(Manifest.SUFFIX)) {
      manifestFile = file;
    } else if (fileName.endsWith(Manifest.SUPPRESSIONS_SUFFIX)) {
      manifestFile = file.resolveSibling(fileName.substring(0, fileName.length() - Manifest.SUPPRESSIONS_SUFFIX.length())
          + Manifest.SUFFIX);
    } else if (fileName.endsWith(Manifest.DATA_SUFFIX)) {
      manifestFile = file.resolveSibling(fileName.substring(0, fileName.length() - Manifest.DATA_SUFFIX.length())
          + Manifest.SUFFIX);
    } else {
      return unreadable(file + " is neither an export (" + Manifest.DATA_SUFFIX + ") nor its manifest (" + Manifest.SUFFIX + ")");
    }
    Manifest manifest;
    try {
      manifest = Manifest.fromJson(new JsonObject(Files.readString(manifestFile, StandardCharsets.UTF_8)));
    } catch (NoSuchFileException e) {
      return unreadable("no manifest " + manifestFile + " (an export without its manifest is incomplete)");
    } catch (AccessDeniedException e) {
      return unreadable("cannot read " + manifestFile + ": permission denied");
    } catch (IOException e) {
      return unreadable("cannot read " + manifestFile + ": " + e.getMessage());
    } catch (DecodeException | IllegalArgumentException | ClassCastException e) {
      return new Verification(Verification.Outcome.MISMATCH, "manifest " + manifestFile + " is not valid: " + e.getMessage(),
          null);
    }
    for (String named : manifest.suppressions() == null ? List.of(manifest.file())
        : List.of(manifest.file(), manifest.suppressions().file())) {
      if (!plainFileName(named)) {
        return new Verification(Verification.Outcome.MISMATCH, "manifest " + manifestFile + " names " + named
            + ", which is not a file beside it", manifest);
      }
    }
    Path data = manifestFile.resolveSibling(manifest.file());
    boolean keyFits = key != null && manifest.mac() != null && key.id().equals(manifest.keyId());
    if (keyFits && !key.authenticates(manifest.signedText(), manifest.mac())) {
      return new Verification(Verification.Outcome.MISMATCH, "manifest " + manifestFile + " is not authentic: its MAC does "
          + "not match its content under key " + key.id() + " (the manifest was changed after the ledger wrote it)", manifest);
    }
    Path listFile = manifest.suppressions() == null ? null : manifestFile.resolveSibling(manifest.suppressions().file());
    try {
      Verification content = check(data, manifest);
      if (!content.ok()) {
        return content;
      }
      if (listFile != null) {
        String list = SuppressionListFile.check(listFile, manifest.suppressions());
        if (list != null) {
          return mismatch(manifest, list);
        }
        content = new Verification(content.outcome(), content.line() + ", suppression list " + manifest.suppressions().rows()
            + " entr(ies) in " + listFile, manifest);
      }
      if (keyFits) {
        return new Verification(Verification.Outcome.OK, content.line() + ", manifest authenticated (key " + key.id() + ")",
            manifest);
      }
      String why = manifest.mac() == null
          ? "it is a format " + manifest.formatVersion() + " manifest, which carries no MAC"
          : key == null
              ? "no archive key to check its MAC under (key " + manifest.keyId() + ")"
              : "it is signed under key " + manifest.keyId() + ", the key here is " + key.id();
      return new Verification(Verification.Outcome.UNAUTHENTICATED, "NOT AUTHENTICATED " + data + " matches its manifest, "
          + "but the manifest cannot be authenticated: " + why + "; a rewritten export would look the same", manifest);
    } catch (NoSuchFileException e) {
      return new Verification(Verification.Outcome.UNREADABLE, "no " + e.getFile() + " beside its manifest " + manifestFile,
          manifest);
    } catch (AccessDeniedException e) {
      return new Verification(Verification.Outcome.UNREADABLE, "cannot read " + e.getFile() + ": permission denied", manifest);
    } catch (IOException e) {
      return new Verification(Verification.Outcome.UNREADABLE, "cannot read " + data + (listFile == null ? "" : " or "
          + listFile) + ": " + e.getMessage(), manifest);
    }
  }

  /** A name that stays beside the manifest: no directory part, no "..", nothing the file system refuses. */
  private static boolean plainFileName(String name) {
    try {
      Path p = Path.of(name);
      return p.getFileName() != null && name.equals(p.getFileName().toString()) && !name.equals("..") && !name.equals(".");
    } catch (java.nio.file.InvalidPathException e) {
      return false;
    }
  }

  private static Verification unreadable(String line) {
    return new Verification(Verification.Outcome.UNREADABLE, line, null);
  }

  /**
   * One pass: the digest sees every byte the decompressor reads, and when the content is damaged the rest is still
   * read, so that a damaged file is reported by its checksum (the first fact), not by whatever broke first.
   */
  private static Verification check(Path data, Manifest manifest) throws IOException {
    long size = Files.size(data);
    if (size != manifest.bytes()) {
      return mismatch(manifest, data + " is " + size + " bytes, the manifest says " + manifest.bytes()
          + (size < manifest.bytes() ? " (truncated)" : ""));
    }
    MessageDigest sha = sha256();
    Map<String, Long> found = new LinkedHashMap<>();
    String damage = null;
    try (InputStream raw = new DigestInputStream(Files.newInputStream(data), sha)) {
      try {
        damage = readRows(raw, found, manifest);
      } catch (ZipException | java.io.EOFException | java.nio.charset.CharacterCodingException e) {
        damage = data + " does not decompress to its end: " + e.getMessage();
      }
      raw.transferTo(OutputStream.nullOutputStream());
    }
    String digest = HexFormat.of().formatHex(sha.digest());
    if (!digest.equalsIgnoreCase(manifest.sha256())) {
      return mismatch(manifest, "checksum mismatch: the sha256 of " + data + " is " + digest + ", the manifest says "
          + manifest.sha256());
    }
    if (damage != null) {
      return mismatch(manifest, damage.startsWith(data.toString()) ? damage : data + ": " + damage);
    }
    Set<String> tables = new LinkedHashSet<>(manifest.rows().keySet());
    tables.addAll(found.keySet());
    for (String table : tables) {
      long inFile = found.getOrDefault(table, 0L);
      long listed = manifest.rows().getOrDefault(table, 0L);
      if (inFile != listed) {
        return mismatch(manifest, table + ": " + inFile + " row(s) in " + data + ", the manifest says " + listed);
      }
    }
    return new Verification(Verification.Outcome.OK, "OK " + data + ": " + manifest.totalRows() + " row(s) " + manifest.rows()
        + " of messages [" + manifest.fromId() + ", " + manifest.toId() + "), received " + orNone(manifest.receivedFrom())
        + " to " + orNone(manifest.receivedTo()) + ", sha256 " + digest, manifest);
  }

  /**
   * Counts the lines per table into {@code found}; null when each is a row of a table an export holds and its message
   * id lies in the manifest's range, else what the first bad one is.
   */
  private static String readRows(InputStream raw, Map<String, Long> found, Manifest manifest) throws IOException {
    var decoder = StandardCharsets.UTF_8.newDecoder(); // reports malformed input instead of replacing it
    BufferedReader lines = new BufferedReader(new InputStreamReader(new GZIPInputStream(raw, 1 << 16), decoder), 1 << 16);
    long n = 0;
    for (String line = lines.readLine(); line != null; line = lines.readLine()) {
      n++;
      String table;
      try {
        JsonObject json = new JsonObject(line);
        table = json.getString("table");
        JsonObject row = json.getJsonObject("row");
        if (table == null || row == null) {
          return "line " + n + " is not a {\"table\", \"row\"} object";
        }
        String outside = outsideRange(table, row, manifest);
        if (outside != null) {
          return "line " + n + ": " + outside;
        }
      } catch (DecodeException | ClassCastException e) {
        return "line " + n + " is not JSON: " + e.getMessage();
      }
      found.merge(table, 1L, Long::sum);
    }
    return null;
  }

  /** Why a row does not belong in this export (a table it does not hold, a message id outside its range), or null. */
  private static String outsideRange(String table, JsonObject row, Manifest manifest) {
    Table t = TABLES.stream().filter(x -> x.name().equals(table)).findFirst().orElse(null);
    if (t == null) {
      return "table " + table + " is not one an export holds";
    }
    UUID id;
    try {
      id = UUID.fromString(row.getString(t.messageColumn()));
    } catch (IllegalArgumentException | NullPointerException e) {
      return table + " row without a message id in " + t.messageColumn();
    }
    if (Partitions.compare(id, manifest.fromId()) < 0 || Partitions.compare(id, manifest.toId()) >= 0) {
      return table + " row with " + t.messageColumn() + " " + id + " is outside the manifest's range [" + manifest.fromId()
          + ", " + manifest.toId() + ")";
    }
    return null;
  }

  private static Verification mismatch(Manifest manifest, String line) {
    return new Verification(Verification.Outcome.MISMATCH, line, manifest);
  }

  private static String orNone(Instant t) {
    return t == null ? "(none)" : t.toString();
  }
}
