package dev.ledgerpost.ledger;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL 17 in a persistent data directory, for a gateway without a configured server. The
 * library starts PostgreSQL with {@code -F} (fsync off) and {@code synchronous_commit=off}; both are
 * overridden here, because a commit must survive a crash (docs/design.md §2.5). A server a killed gateway left
 * running on the directory is stopped first; a directory another live gateway holds is refused
 * ({@link DataDirectoryGuard}). Blocking: call off the event loop.
 */
public final class EmbeddedDatabase implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedDatabase.class);

  private final EmbeddedPostgres postgres;
  private final Path dataDir;

  private EmbeddedDatabase(EmbeddedPostgres postgres, Path dataDir) {
    this.postgres = postgres;
    this.dataDir = dataDir;
  }

  public static EmbeddedDatabase start(Path dataDir, int port) {
    try {
      Path dir = dataDir.toAbsolutePath();
      Files.createDirectories(dir);
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
          // Runs once zonky holds the directory's lock, just before it starts the server.
          .setDataDirectoryCustomizer(d -> DataDirectoryGuard.stopOrphan(dir));
      if (port > 0) {
        builder.setPort(port);
      }
      EmbeddedPostgres pg;
      try {
        pg = builder.start();
      } catch (IllegalStateException e) {
        // zonky's lock: "could not lock" when another process holds it, an overlap when this one does.
        if (e instanceof OverlappingFileLockException || String.valueOf(e.getMessage()).startsWith("could not lock")) {
          throw DataDirectoryGuard.inUse(dir, e);
        }
        throw e;
      }
      EmbeddedDatabase db = new EmbeddedDatabase(pg, dir);
      LOG.info("embedded PostgreSQL running on data directory {}: psql postgresql://postgres@localhost:{}/postgres (JDBC {})",
          dir, pg.getPort(), db.jdbcUrl());
      return db;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the embedded PostgreSQL in " + dataDir, e);
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
    }
  }
}
