package dev.ledgerpost.platform.lockfile;

import dev.ledgerpost.platform.config.PrivateFiles;
import dev.ledgerpost.platform.config.StartFailure;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A directory that belongs to one gateway: an exclusive OS lock ({@link FileChannel#tryLock}, a POSIX
 * record lock on Linux) on a lock file, held for as long as the gateway uses the directory, with the
 * holder's PID written inside for an operator. The OS lock is what counts: it ends with the process,
 * also on SIGKILL or OOM, so a restarted gateway takes it again, and a lock file left with a dead
 * process's PID in it is no obstacle. The file is never deleted (deleting a lock file while someone
 * holds it would let a third process lock a new file of the same name).
 *
 * <p>Within one JVM (tests run several gateways in one), a second gateway on the same directory is
 * refused as "held by this process", and without opening the file again: POSIX locks belong to the
 * process, so closing any descriptor of the file would silently drop the lock the first gateway still
 * believes it holds (the caveat in {@link FileLock}'s documentation). Hence the JVM-wide table of the
 * lock files held here, by file identity (device and inode).
 *
 * <p>Blocking: call off the event loop.
 */
public final class LockFile implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LockFile.class);
  /** The lock file's name inside a directory the gateway owns outright (the outcome journal's). */
  public static final String NAME = "ledgerpost.lock";

  /** Guarded by LockFile.class: the lock files this JVM holds, by file identity. */
  private static final Map<Object, LockFile> HELD = new HashMap<>();
  /**
   * Guarded by LockFile.class: channels that found their file locked by other code of this JVM. They stay
   * open for good, since closing them would release that code's lock (see above).
   */
  private static final List<FileChannel> NEVER_CLOSED = new ArrayList<>();

  private final Path file;
  private final Object identity;
  private final FileChannel channel;
  private final FileLock lock;
  private boolean released;

  private LockFile(Path file, Object identity, FileChannel channel, FileLock lock) {
    this.file = file;
    this.identity = identity;
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Locks {@code file} for {@code dir}, the directory named by the configuration key {@code key} (both only
   * for the refusal's words), or refuses with {@link DirectoryInUse} naming the holder. A lock file that
   * cannot be opened at all (no permission, a read-only file system) is a {@link StartFailure} too.
   */
  public static LockFile acquire(String key, Path dir, Path file) {
    synchronized (LockFile.class) {
      try {
        PrivateFiles.createDirectories(file.getParent()); // a directory a gateway owns: 0700 when it makes it
      } catch (IOException e) {
        throw new StartFailure(key + " " + dir + ": cannot create " + file.getParent() + " (" + e + ")", e);
      }
      Object existing = identity(file);
      if (existing != null && HELD.containsKey(existing)) {
        throw new DirectoryInUse(refusal(key, dir, file, OptionalLong.of(ProcessHandle.current().pid()), true), null);
      }
      FileChannel channel;
      try {
        channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
      } catch (IOException e) {
        throw new StartFailure(key + " " + dir + ": cannot open its lock file " + file + " (" + e + ")", e);
      }
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException e) {
        NEVER_CLOSED.add(channel); // locked by code of this JVM that is not this class: see NEVER_CLOSED
        throw new DirectoryInUse(refusal(key, dir, file, OptionalLong.of(ProcessHandle.current().pid()), true), e);
      } catch (IOException e) {
        closeQuietly(channel);
        throw new StartFailure(key + " " + dir + ": cannot lock " + file + " (" + e + ")", e);
      }
      if (lock == null) {
        OptionalLong holder = holder(file);
        if (holder.isEmpty()) {
          holder = pidIn(channel); // not on Linux, or the holder's lock is not a POSIX one
        }
        closeQuietly(channel); // this process holds no lock on the file, so closing releases nothing
        throw new DirectoryInUse(refusal(key, dir, file, holder, false), null);
      }
      writePid(channel, file);
      LockFile held = new LockFile(file, identity(file), channel, lock);
      HELD.put(held.identity, held);
      return held;
    }
  }

  public Path file() {
    return file;
  }

  /** Releases the lock; the file and the PID in it stay (see the class comment). Idempotent. */
  @Override
  public void close() {
    synchronized (LockFile.class) {
      if (released) {
        return;
      }
      released = true;
      HELD.remove(identity, this);
      try {
        lock.release();
      } catch (IOException e) {
        LOG.debug("releasing {}: {}", file, e.toString()); // closing the channel releases it anyway
      }
      closeQuietly(channel);
    }
  }

  /**
   * The refusal, one line an operator can act on: {@code ledger.dataDir /srv/data/pg is in use by another
   * running gateway (process 4242 holds its lock /srv/data/pg.lock); stop that gateway first, or give this
   * one its own ledger.dataDir}. Also worded here for a lock this class did not take (zonky's).
   */
  public static String refusal(String key, Path dir, Path file, OptionalLong holder, boolean thisProcess) {
    if (thisProcess) {
      return key + " " + dir + " is in use by another gateway in this process (PID " + holder.orElse(-1)
          + " holds its lock " + file + "); give each gateway its own " + key;
    }
    String who = holder.isPresent() ? "process " + holder.getAsLong() + " holds its lock " : "its lock is held: ";
    return key + " " + dir + " is in use by another running gateway (" + who + file + "); stop that gateway first, "
        + "or give this one its own " + key;
  }

  /**
   * The PID holding a POSIX lock on {@code file}, from /proc/locks ("1: POSIX ADVISORY WRITE 4242 fd:01:1234 0 EOF":
   * the PID, then the device's major and minor in hex and the inode). Empty when not on Linux or not found.
   * It reads only /proc/locks and the file's attributes, never the file: see the class comment.
   */
  public static OptionalLong holder(Path file) {
    Path locks = Path.of("/proc/locks");
    try {
      if (!Files.isReadable(locks) || !Files.exists(file)) {
        return OptionalLong.empty();
      }
      long inode = ((Number) Files.getAttribute(file, "unix:ino")).longValue();
      long dev = ((Number) Files.getAttribute(file, "unix:dev")).longValue();
      long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
      long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
      for (String line : Files.readAllLines(locks, StandardCharsets.US_ASCII)) {
        String[] f = line.trim().split("\\s+");
        if (f.length < 6 || f[1].equals("->") || !f[1].equals("POSIX")) {
          continue; // a waiter, or a flock/OFD lock (the JDK's FileLock and zonky's are POSIX)
        }
        String[] id = f[5].split(":");
        if (id.length == 3 && Long.parseLong(id[2]) == inode && Long.parseLong(id[0], 16) == major
            && Long.parseLong(id[1], 16) == minor) {
          return OptionalLong.of(Long.parseLong(f[4]));
        }
      }
    } catch (IOException | RuntimeException e) {
      // naming the holder is a courtesy: the refusal stands without it
    }
    return OptionalLong.empty();
  }

  /** Device and inode where the platform has them (two paths to one file are one lock), else the real path; null: no file. */
  private static Object identity(Path file) {
    try {
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      return a.fileKey() != null ? a.fileKey() : file.toRealPath();
    } catch (NoSuchFileException e) {
      return null; // nobody here holds a file that does not exist
    } catch (IOException e) {
      return file.toAbsolutePath().normalize();
    }
  }

  /** The PID the holder wrote, when the lock table cannot say; read through our own, unlocked channel. */
  private static OptionalLong pidIn(FileChannel channel) {
    try {
      ByteBuffer b = ByteBuffer.allocate(32);
      channel.read(b, 0);
      String s = new String(b.array(), 0, b.position(), StandardCharsets.US_ASCII).trim();
      return s.matches("\\d{1,10}") ? OptionalLong.of(Long.parseLong(s)) : OptionalLong.empty();
    } catch (IOException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * Our PID into the file, for an operator and for a refusal where /proc/locks cannot tell. A write that fails
   * (a full disk) leaves the lock as good as before: it is the OS lock that counts.
   */
  private static void writePid(FileChannel channel, Path file) {
    try {
      channel.truncate(0);
      ByteBuffer b = ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII));
      while (b.hasRemaining()) {
        channel.write(b, b.position());
      }
    } catch (IOException e) {
      LOG.warn("locked {}, but cannot write this process's PID into it ({}); the lock holds regardless", file, e.toString());
    }
  }

  private static void closeQuietly(FileChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // nothing more to release
    }
  }
}
