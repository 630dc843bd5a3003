package dev.ledgerpost.platform.db;

import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.lockfile.LockFile;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL 17 in a persistent data directory, for a gateway without a configured server. The
 * library starts PostgreSQL with {@code -F} (fsync off) and {@code synchronous_commit=off}; both are
 * overridden here, because a commit must survive a crash (docs/contract.md §2.5). The directory is this
 * gateway's alone: its lock file ({@link LockFile}, {@code pg.lock} next to {@code pg}, beside because initdb wants
 * an empty directory) is taken before the library touches it, so a directory another live gateway holds is
 * refused. A server a killed gateway left running on the directory is stopped first ({@link DataDirectoryGuard}). PostgreSQL's own output (initdb, the server log, pg_ctl) goes to
 * {@code postgresql.log} next to the data directory; when the server does not start, the failure says so in
 * one line followed by that log's last lines (docs/design.md §11.1). Blocking: call off the event loop.
 */
public final class EmbeddedDatabase implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedDatabase.class);
  /** The server log is moved aside to postgresql.log.1 at a start that finds it larger than this. */
  private static final long LOG_ROTATE_BYTES = 10L * 1024 * 1024;
  /** How much of the server log a failed start shows. */
  private static final int LOG_TAIL_LINES = 12;

  private final EmbeddedPostgres postgres;
  private final Path dataDir;
  private final LockFile lock;

  private EmbeddedDatabase(EmbeddedPostgres postgres, Path dataDir, LockFile lock) {
    this.postgres = postgres;
    this.dataDir = dataDir;
    this.lock = lock;
  }

  /**
   * Ahead of zonky's own lock ({@code epg-lock} inside the directory), which comes only after initdb, so two
   * gateways on a fresh directory could both run initdb; and which, asked twice in one JVM, leaves an unclosed
   * stream whose eventual close drops the first holder's lock (see {@link LockFile}).
   */
  static Path lockFile(Path dir) {
    return dir.resolveSibling(dir.getFileName() + ".lock");
  }

  public static EmbeddedDatabase start(Path dataDir, int port) {
    Path dir = dataDir.toAbsolutePath();
    LockFile lock = LockFile.acquire("ledger.dataDir", dir, lockFile(dir));
    try {
      EmbeddedDatabase db = start(dir, port, lock);
      lock = null;
      return db;
    } finally {
      if (lock != null) {
        lock.close(); // the server did not start; nothing of this gateway is left on the directory
      }
    }
  }

  private static EmbeddedDatabase start(Path dir, int port, LockFile lock) {
    try {
      Files.createDirectories(dir);
      Path serverLog = serverLog(dir);
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
          .setDataDirectory(dir)
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setServerConfig("fsync", "on")
          .setServerConfig("synchronous_commit", "on")
          .setServerConfig("full_page_writes", "on")
          .setServerConfig("listen_addresses", "localhost")
          .setServerConfig("max_connections", "200")
          // Autovacuum's ANALYZE is what replaces the generic plans a connection cached while the tables were
          // empty: at a fresh start they would otherwise go on scanning tables that keep growing.
          .setServerConfig("autovacuum_naptime", "5s")
          // The full-page images written after each checkpoint are most of the WAL a busy ledger writes then.
          .setServerConfig("wal_compression", "on")
          // Runs once zonky holds the directory's lock, just before it starts the server.
          .setDataDirectoryCustomizer(d -> DataDirectoryGuard.stopOrphan(dir))
          // Not into a logger that our logback level hides: into a file an operator can read, and a failed start quotes.
          .setOutputRedirector(ProcessBuilder.Redirect.appendTo(serverLog.toFile()))
          .setErrorRedirector(ProcessBuilder.Redirect.appendTo(serverLog.toFile()));
      if (port > 0) {
        builder.setPort(port);
      }
      EmbeddedPostgres pg;
      try {
        pg = builder.start();
      } catch (DataDirectoryUnavailable e) {
        throw e;
      } catch (IllegalStateException e) {
        // zonky's lock: "could not lock" when another process holds it, an overlap when this one does.
        if (e instanceof OverlappingFileLockException || String.valueOf(e.getMessage()).startsWith("could not lock")) {
          throw DataDirectoryGuard.inUse(dir, e);
        }
        throw notStarted(dir, serverLog, e);
      } catch (IOException | RuntimeException e) {
        throw notStarted(dir, serverLog, e);
      }
      EmbeddedDatabase db = new EmbeddedDatabase(pg, dir, lock);
      LOG.info("embedded PostgreSQL running on data directory {}: psql postgresql://postgres@localhost:{}/postgres (JDBC {})",
          dir, pg.getPort(), db.jdbcUrl());
      return db;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the embedded PostgreSQL in " + dir, e);
    }
  }

  /** {@code postgresql.log} next to the data directory, moved aside first when it has grown large. */
  static Path serverLog(Path dir) throws IOException {
    Path log = dir.resolveSibling("postgresql.log");
    if (Files.isRegularFile(log) && Files.size(log) > LOG_ROTATE_BYTES) {
      Files.move(log, dir.resolveSibling("postgresql.log.1"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
    return log;
  }

  /** The server did not come up: say so, then what PostgreSQL itself said (its log's last lines). */
  static StartFailure notStarted(Path dir, Path serverLog, Throwable cause) {
    String why = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage().lines().findFirst().orElse("");
    StringBuilder message = new StringBuilder("the embedded PostgreSQL did not start on ledger.dataDir " + dir + " (" + why
        + "); the last lines of its log " + serverLog + ":");
    List<String> tail = tail(serverLog, LOG_TAIL_LINES);
    if (tail.isEmpty()) {
      message.append("\n  (empty)");
    }
    tail.forEach(line -> message.append("\n  ").append(line));
    return new StartFailure(message.toString(), cause);
  }

  /** The last lines of a file, from its last 64 KB, decoded leniently (a log is not always clean UTF-8). */
  static List<String> tail(Path file, int lines) {
    try (java.nio.channels.SeekableByteChannel ch = Files.newByteChannel(file)) {
      long from = Math.max(0, ch.size() - 64 * 1024);
      java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate((int) (ch.size() - from));
      ch.position(from);
      while (buf.hasRemaining() && ch.read(buf) > 0) {
        // read to the end
      }
      List<String> all = new String(buf.array(), 0, buf.position(), java.nio.charset.StandardCharsets.UTF_8).lines()
          .filter(l -> !l.isBlank()).toList();
      return all.subList(Math.max(0, all.size() - lines), all.size());
    } catch (IOException e) {
      return List.of("(cannot read it: " + e.getMessage() + ")");
    }
  }

  public int port() {
    return postgres.getPort();
  }

  public Path dataDir() {
    return dataDir;
  }

  public String jdbcUrl() {
    return postgres.getJdbcUrl("postgres", "postgres");
  }

  @Override
  public void close() {
    try {
      postgres.close();
      LOG.info("embedded PostgreSQL stopped");
    } catch (IOException e) {
      LOG.warn("embedded PostgreSQL did not stop cleanly", e);
    } finally {
      lock.close(); // after the server: the next gateway on the directory must not meet it still running
    }
  }
}
