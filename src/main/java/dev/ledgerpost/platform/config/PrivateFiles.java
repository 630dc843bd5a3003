package dev.ledgerpost.platform.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files the gateway writes that only its own user may read: generated secrets (the admin token, the erasure key), and
 * files that hold addresses (ledger exports, the outcome journal). Each is created owner-only ({@code 0600}, its new
 * directories {@code 0700}) by the system call that creates it, never created with the umask's mode and restricted
 * afterwards: in between, another user could open it, and an open descriptor keeps reading after a chmod
 * (docs/design.md §11.2). On a file system without POSIX permissions they are created as it allows. Blocking: workers
 * and start-up only.
 */
public final class PrivateFiles {
  private static final Logger LOG = LoggerFactory.getLogger(PrivateFiles.class);
  private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
  private static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> DIRECTORY = PosixFilePermissions.fromString("rwx------");

  private PrivateFiles() {}

  /** The attributes that make a new file owner-only (none where the file system has no POSIX permissions). */
  public static FileAttribute<?>[] file() {
    return POSIX ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(FILE)} : new FileAttribute<?>[0];
  }

  /** Creates {@code dir} and its missing parents {@code 0700}; directories that exist are left as they are. */
  public static Path createDirectories(Path dir) throws IOException {
    return POSIX ? Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIRECTORY)) : Files.createDirectories(dir);
  }

  /** Opens {@code file} with {@code options}; if they create it, it is created {@code 0600}. */
  public static FileChannel open(Path file, OpenOption... options) throws IOException {
    return FileChannel.open(file, new LinkedHashSet<>(List.of(options)), file());
  }

  /** A new file (CREATE_NEW: an existing one is a {@link FileAlreadyExistsException}), {@code 0600}, fsynced. */
  public static void writeNew(Path file, byte[] content) throws IOException {
    try (FileChannel ch = open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.wrap(content);
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    }
  }

  /**
   * Writes a generated secret into {@code file} unless someone wrote one first; answers whether this call wrote it.
   * The text goes into a temporary file created {@code 0600} and fsynced, which is then linked under the final name
   * (a link never replaces a file) and the directory fsynced: a reader, another gateway on the same directory
   * included, sees no file or the whole secret, never half of one, and a secret that was used was on disk before its
   * first use (a crash cannot bring back a different one, or none).
   */
  public static boolean writeSecret(Path file, String text) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    createDirectories(dir);
    byte[] random = new byte[8];
    new SecureRandom().nextBytes(random);
    Path tmp = dir.resolve("." + file.getFileName() + "." + HexFormat.of().formatHex(random) + ".tmp");
    try {
      writeNew(tmp, text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      try {
        Files.createLink(file, tmp);
      } catch (FileAlreadyExistsException raced) {
        return false; // another gateway sharing the directory wrote it first: that one is the secret
      } catch (UnsupportedOperationException | IOException noLinks) {
        if (Files.exists(file)) {
          return false;
        }
        // A file system without hard links: a rename, which could replace a secret written since the check.
        Files.move(tmp, file);
      }
      syncDirectory(dir);
      return true;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * A new random key, 32 bytes as hex on one line, written into {@code file} as {@link #writeSecret} writes, unless
   * the file exists; answers whether this call wrote it (the erasure key, the archive key).
   */
  public static boolean generateKey(Path file) throws IOException {
    if (Files.exists(file)) {
      return false;
    }
    byte[] random = new byte[32];
    new SecureRandom().nextBytes(random);
    return writeSecret(file, HexFormat.of().formatHex(random) + "\n");
  }

  /** fsync of a directory: its entries (a new name, a rename) survive a crash. Where that is not possible, logged. */
  public static void syncDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      if (!Files.isDirectory(dir)) {
        throw e;
      }
      LOG.debug("cannot fsync directory {} on this file system: {}", dir, e.toString());
    }
  }
}
