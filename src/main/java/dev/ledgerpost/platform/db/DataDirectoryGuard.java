package dev.ledgerpost.platform.db;

import dev.ledgerpost.platform.lockfile.LockFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who else is on the embedded ledger's data directory. The gateway's own lock file ({@code pg.lock} beside the
 * directory, {@link dev.ledgerpost.platform.lockfile.LockFile}) refuses another live gateway before anything below runs;
 * behind it, two cases are told apart by zonky's lock file ({@code epg-lock}, a POSIX lock the JVM holds while
 * its server runs, which dies with the JVM):
 *
 * <ul>
 *   <li>The lock is held: something other than a gateway (zonky used directly, say) owns the directory.
 *       Start-up is refused with one line ({@link DataDirectoryUnavailable}) naming the holder's PID when
 *       {@code /proc/locks} tells it.
 *   <li>The lock is ours, yet {@code postmaster.pid} names a live postgres whose data directory is this
 *       one: a gateway was killed (SIGKILL, OOM) and left its server running. pg_ctl starts PostgreSQL
 *       detached, so it never dies with the JVM. Left alone, the new server cannot start on the directory
 *       and zonky gives up after 10 s. It is stopped here: fast shutdown (SIGINT), immediate (SIGQUIT)
 *       after a bound, each waited for with a deadline; one log line says so.
 * </ul>
 *
 * Blocking: runs in the embedded server's start, off the event loop. Linux-first: the PID of a lock's
 * holder and a process's working directory come from /proc; elsewhere the PID is not named and the
 * directory is taken from postmaster.pid.
 */
final class DataDirectoryGuard {
  private static final Logger LOG = LoggerFactory.getLogger(DataDirectoryGuard.class);
  static final String LOCK_FILE = "epg-lock"; // zonky's name (EmbeddedPostgres.LOCK_FILE_NAME)
  private static final Duration FAST = Duration.ofSeconds(20);
  private static final Duration IMMEDIATE = Duration.ofSeconds(10);

  private DataDirectoryGuard() {}

  /** The refusal for zonky's held lock, worded as {@link LockFile}'s, naming its holder when /proc/locks knows it. */
  static DataDirectoryUnavailable inUse(Path dir, Throwable cause) {
    Path lock = dir.resolve(LOCK_FILE);
    OptionalLong holder = LockFile.holder(lock);
    boolean here = holder.isPresent() && holder.getAsLong() == ProcessHandle.current().pid();
    return new DataDirectoryUnavailable(LockFile.refusal("ledger.dataDir", dir, lock, holder, here), cause);
  }

  /**
   * Called with the directory's lock held by this process (zonky's data directory customizer runs after
   * it locked and before it starts the server): any postgres still running on the directory is an orphan.
   */
  static void stopOrphan(Path dir) {
    Path pidFile = dir.resolve("postmaster.pid");
    List<String> lines;
    try {
      if (!Files.isRegularFile(pidFile)) {
        return;
      }
      lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + pidFile, e);
    }
    if (lines.size() < 2 || !lines.get(0).trim().matches("\\d{1,10}")) {
      return; // not a postmaster.pid PostgreSQL would trust either: it decides
    }
    long pid = Long.parseLong(lines.get(0).trim());
    Optional<ProcessHandle> process = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
    if (process.isEmpty() || !isPostgresOn(process.get(), dir, Path.of(lines.get(1).trim()))) {
      return; // a stale file (the server died with its machine): PostgreSQL starts over it by itself
    }
    long started = System.nanoTime();
    String how = "fast";
    signal(pid, "INT");
    if (!gone(process.get(), FAST)) {
      how = "immediate";
      signal(pid, "QUIT");
      if (!gone(process.get(), IMMEDIATE)) {
        throw new DataDirectoryUnavailable("the embedded PostgreSQL (PID " + pid + ") that an earlier gateway left running on "
            + dir + " did not stop within " + FAST.plus(IMMEDIATE).toSeconds() + " s; stop it (kill -QUIT " + pid
            + ") and start again", null);
      }
    }
    LOG.warn("stopped the embedded PostgreSQL (PID {}) that an earlier gateway left running on {} when it was killed "
        + "({} shutdown, {} ms); starting a new one", pid, dir, how, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
  }

  /** A postgres executable whose working directory (PostgreSQL changes into its data directory) is {@code dir}. */
  private static boolean isPostgresOn(ProcessHandle p, Path dir, Path declared) {
    boolean postgres = p.info().command().map(c -> Path.of(c).getFileName().toString().equals("postgres")).orElse(false);
    if (!postgres) {
      return false; // the PID was reused by something else
    }
    try {
      Path ours = dir.toRealPath();
      Path cwd = Path.of("/proc", String.valueOf(p.pid()), "cwd");
      if (Files.isSymbolicLink(cwd)) {
        return cwd.toRealPath().equals(ours);
      }
      return Files.isDirectory(declared) && declared.toRealPath().equals(ours);
    } catch (IOException e) {
      return false; // not ours to look at, so not ours to stop
    }
  }

  /** Sends a signal by the shell's own kill: the JDK can only send SIGTERM and SIGKILL. */
  private static void signal(long pid, String signal) {
    try {
      Process kill = new ProcessBuilder("/bin/sh", "-c", "kill -s " + signal + " " + pid)
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (!kill.waitFor(10, TimeUnit.SECONDS)) {
        kill.destroyForcibly();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot signal process " + pid, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while stopping process " + pid, e);
    }
  }

  /** Polls with a deadline: the orphan is not our child, so there is nothing to wait on. */
  private static boolean gone(ProcessHandle p, Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    while (p.isAlive()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return !p.isAlive();
      }
    }
    return true;
  }
}
