package dev.ledgerpost.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PostgreSQL primary of a test's own with one streaming standby, made with the server's own programs
 * ({@link ExternalTool#POSTGRESQL_SERVER}: initdb, pg_ctl, pg_basebackup) in a second or two: the suite's shared
 * server has no standby, and a synchronous one is what {@code ledger.requireSynchronousStandby} looks for. The primary
 * names every standby synchronous ({@code synchronous_standby_names = '*'}); {@link #synchronousNames} changes that.
 * Both listen on 127.0.0.1 only (no Unix socket), trust every local connection, and are stopped at {@link #close}.
 *
 * <p>PostgreSQL refuses to run as root, and CI runs as root: there every program runs as the {@code postgres} user
 * ({@code runuser}), in a directory under /tmp that user owns.
 */
public final class StreamingStandby implements AutoCloseable {
  private static final Duration PROGRAM_TIMEOUT = Duration.ofSeconds(60);
  private static final boolean ROOT = "root".equals(System.getProperty("user.name"));

  private final Path bin;
  private final Path dir;
  private final int primaryPort;
  private final List<Path> running = new ArrayList<>();

  private StreamingStandby(Path bin, Path dir, int primaryPort) {
    this.bin = bin;
    this.dir = dir;
    this.primaryPort = primaryPort;
  }

  /** A primary, and a standby streaming from it that the primary counts as synchronous once this returns. */
  public static StreamingStandby start() throws Exception {
    Path bin = Path.of(ExternalTool.POSTGRESQL_SERVER.path()).getParent();
    Path dir = Files.createTempDirectory("ledgerpost-standby-");
    if (ROOT) {
      UserPrincipalLookupService users = dir.getFileSystem().getUserPrincipalLookupService();
      Files.setOwner(dir, users.lookupPrincipalByName("postgres"));
    }
    StreamingStandby s = new StreamingStandby(bin, dir, freePort());
    try {
      s.run("initdb", "-D", dir.resolve("primary").toString(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8");
      s.startServer("primary", s.primaryPort);
      s.synchronousNames("*"); // in postgresql.auto.conf, not on the command line, which no reload could change
      s.run("pg_basebackup", "-D", dir.resolve("standby").toString(), "-R", "-X", "stream", "-c", "fast", "-d",
          "host=127.0.0.1 port=" + s.primaryPort + " user=postgres application_name=standby1");
      s.startServer("standby", freePort());
      Poll.until(Duration.ofSeconds(30), "the primary counts its standby as synchronous", () -> s.syncStates().equals("sync"));
      return s;
    } catch (Exception | Error e) {
      s.close();
      throw e;
    }
  }

  /** postgresql://user@127.0.0.1:port/database on the primary, as ledger.url takes it. */
  public String url(String user, String database) {
    return "postgresql://" + user + "@127.0.0.1:" + primaryPort + "/" + database;
  }

  /** A connection to the primary's {@code postgres} database as the superuser. */
  public Connection superuser() throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + primaryPort + "/postgres", "postgres", "");
  }

  /** The primary's synchronous_standby_names from now on ('' = none: the standby streams on as async). */
  public void synchronousNames(String names) throws SQLException {
    try (Connection c = superuser(); var st = c.createStatement()) {
      st.execute("ALTER SYSTEM SET synchronous_standby_names = '" + names.replace("'", "''") + "'");
      st.execute("SELECT pg_reload_conf()");
    }
  }

  /** The standbys' sync_state on the primary, comma-separated. */
  public String syncStates() throws SQLException {
    try (Connection c = superuser(); var st = c.createStatement();
        var rs = st.executeQuery("SELECT coalesce(string_agg(sync_state, ','), '') FROM pg_stat_replication")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private void startServer(String name, int port) throws Exception {
    String options = "-c listen_addresses=127.0.0.1 -c port=" + port + " -c unix_socket_directories=''";
    Path data = dir.resolve(name);
    run("pg_ctl", "-D", data.toString(), "-l", dir.resolve(name + ".log").toString(), "-o", options, "-w", "start");
    running.add(data);
  }

  /** Runs one of the server's programs to its end (as postgres when this JVM is root); fails with its output. */
  private void run(String program, String... args) throws Exception {
    List<String> command = new ArrayList<>();
    if (ROOT) {
      command.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    command.add(bin.resolve(program).toString());
    command.addAll(List.of(args));
    Path out = dir.resolve(program + ".out");
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(out.toFile()).start();
    if (!p.waitFor(PROGRAM_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException(program + " did not finish within " + PROGRAM_TIMEOUT.toSeconds() + " s");
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException(program + " failed (exit " + p.exitValue() + "): " + Files.readString(out));
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Stops the standby, then the primary (immediate: a test's data needs no checkpoint), and removes their files. */
  @Override
  public void close() throws Exception {
    Exception failed = null;
    for (int i = running.size() - 1; i >= 0; i--) {
      try {
        run("pg_ctl", "-D", running.get(i).toString(), "-m", "immediate", "-w", "stop");
      } catch (Exception e) {
        failed = e;
      }
    }
    running.clear();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
    if (failed != null) {
      throw failed;
    }
  }
}
