package dev.ledgerpost.platform.lockfile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarness;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The lock file on real files and real processes: held, refused (in this JVM and from another process, naming
 * the holder), released by close and by SIGKILL, and a lock file whose PID is a dead process's is no obstacle.
 */
class LockFileTest {
  final Path dir = GatewayHarness.tempDir("lockfile-");
  final Path file = dir.resolve(LockFile.NAME);
  final long self = ProcessHandle.current().pid();
  final List<AutoCloseable> opened = new ArrayList<>();
  Process holder;

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : opened) {
      c.close();
    }
    if (holder != null) {
      holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
  }

  /**
   * The file's content read by another process ({@code cat}): a read in this JVM would open and close a
   * descriptor of the file, and that close drops every POSIX lock this process holds on it.
   */
  static String readElsewhere(Path f) throws Exception {
    Process cat = new ProcessBuilder("cat", f.toString()).redirectErrorStream(true).start();
    String content = new String(cat.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
    assertThat(cat.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return content;
  }

  LockFile acquire(Path lockFile) {
    LockFile l = LockFile.acquire("retry.journalDir", dir, lockFile);
    opened.add(l);
    return l;
  }

  @Test
  void aHeldLockIsRefusedInThisProcessWithoutLosingTheLockTheFirstHolderHas() throws Exception {
    acquire(file);
    assertThat(LockFile.holder(file)).as("the OS lock, from /proc/locks").isEqualTo(OptionalLong.of(self));
    assertThat(readElsewhere(file)).isEqualTo(self + "\n");

    // Another path to the same file (a symbolic link to the directory): the same lock.
    Path alias = Files.createSymbolicLink(GatewayHarness.tempDir("lockfile-alias-").resolve("dir"), dir);
    assertThatThrownBy(() -> acquire(alias.resolve(LockFile.NAME)))
        .isInstanceOf(DirectoryInUse.class)
        .hasMessage("retry.journalDir " + dir + " is in use by another gateway in this process (PID " + self
            + " holds its lock " + alias.resolve(LockFile.NAME) + "); give each gateway its own retry.journalDir");

    // Refusing must not have opened and closed the file: closing any descriptor of it would drop the lock.
    assertThat(LockFile.holder(file)).as("still locked after the refusal").isEqualTo(OptionalLong.of(self));
  }

  @Test
  void aReleasedLockIsTakenAgain() throws Exception {
    LockFile first = acquire(file);
    first.close();
    assertThat(LockFile.holder(file)).isEmpty();
    first.close(); // idempotent

    acquire(file);
    assertThat(LockFile.holder(file)).isEqualTo(OptionalLong.of(self));
  }

  @Test
  void aLockFileLeftWithADeadProcesssPidIsNoObstacle() throws Exception {
    Process gone = new ProcessBuilder("/bin/true").start();
    assertThat(gone.waitFor(30, TimeUnit.SECONDS)).isTrue();
    Files.writeString(file, gone.pid() + "\n");

    acquire(file);
    assertThat(LockFile.holder(file)).isEqualTo(OptionalLong.of(self));
    assertThat(readElsewhere(file)).as("our PID replaces the dead one").isEqualTo(self + "\n");
  }

  @Test
  void aLockAnotherProcessHoldsIsRefusedNamingItsPidAndIsFreeOnceThatProcessIsKilled() throws Exception {
    Files.writeString(file, "1\n"); // what the holder writes counts for nothing: /proc/locks names it
    holder = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), Holder.class.getName(), dir.toString())
        .redirectErrorStream(true).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = out.readLine()) != null && !line.equals("locked")) {
      System.out.println("[holder] " + line);
    }
    assertThat(line).as("the holder said it has the lock").isEqualTo("locked");
    assertThat(Files.readString(file)).isEqualTo(holder.pid() + "\n");

    assertThatThrownBy(() -> acquire(file))
        .isInstanceOf(DirectoryInUse.class)
        .hasMessage("retry.journalDir " + dir + " is in use by another running gateway (process " + holder.pid()
            + " holds its lock " + file + "); stop that gateway first, or give this one its own retry.journalDir");

    holder.destroyForcibly(); // SIGKILL: no shutdown hook, no close; the OS drops the lock with the process
    assertThat(holder.waitFor(30, TimeUnit.SECONDS)).isTrue();
    acquire(file);
    assertThat(LockFile.holder(file)).isEqualTo(OptionalLong.of(self));
    assertThat(readElsewhere(file)).isEqualTo(self + "\n");
  }

  /** Another process: takes the lock of the directory given, says so, and holds it until it is killed. */
  public static final class Holder {
    public static void main(String[] args) throws Exception {
      Path d = Path.of(args[0]);
      LockFile.acquire("retry.journalDir", d, d.resolve(LockFile.NAME));
      System.out.println("locked");
      System.out.flush();
      System.in.read(); // until killed (or its parent goes)
    }
  }
}
