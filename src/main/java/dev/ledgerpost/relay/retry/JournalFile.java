package dev.ledgerpost.relay.retry;

import dev.ledgerpost.platform.config.PrivateFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outcome journal's file, on the journal's io thread only: appends with one fsync per batch, emptying,
 * and the atomic rewrite compaction uses. A write that fails leaves no half record behind it. What to write
 * and when, and who waits for it, is {@link OutcomeJournal}'s.
 */
final class JournalFile {
  /** The journal's logger: these lines are the journal's, under the name operators filter on. */
  private static final Logger LOG = LoggerFactory.getLogger(OutcomeJournal.class);

  private final Path dir;
  private final Path file;
  private final Path tmp;
  private final OutcomeJournal.Opener opener;
  private FileChannel channel;

  JournalFile(Path dir, Path file, Path tmp, OutcomeJournal.Opener opener) {
    this.dir = dir;
    this.file = file;
    this.tmp = tmp;
    this.opener = opener;
  }

  /** The channel, with any bytes of an earlier failed write cut off. {@code expected} < 0: take the size as it is. */
  private FileChannel channel(long expected) throws IOException {
    if (channel == null) {
      channel = opener.open(file);
    }
    if (expected >= 0) {
      long size = channel.size();
      if (size > expected) {
        channel.truncate(expected);
      } else if (size < expected) {
        LOG.error("outcome journal {} is {} bytes, expected {}: was it changed by someone else?", file, size, expected);
      }
    }
    return channel;
  }

  /** Appends the records to a file of {@code before} bytes, fsynced if {@code sync}; answers the file's new size. */
  long append(long before, List<byte[]> records, boolean sync) throws IOException {
    long start = -1;
    try {
      FileChannel ch = channel(before);
      start = ch.size();
      ByteBuffer[] buffers = records.stream().map(ByteBuffer::wrap).toArray(ByteBuffer[]::new);
      long total = 0;
      for (ByteBuffer b : buffers) {
        total += b.remaining();
      }
      long written = 0;
      while (written < total) {
        written += ch.write(buffers);
      }
      if (sync) {
        ch.force(true);
      }
      return ch.size();
    } catch (IOException | RuntimeException e) {
      // Not one record of this batch is acknowledged. Cut off whatever part of it reached the file, so no
      // half record sits between intact ones (the next write checks the size again), and reopen next time.
      if (start >= 0 && channel != null) {
        try {
          channel.truncate(start);
        } catch (IOException ignored) {
          // the next write truncates to the size it expects
        }
      }
      closeQuietly();
      throw e;
    }
  }

  /**
   * Nothing is open: the file is emptied in place, without an fsync. Should a crash undo the
   * truncation, the old file comes back holding only outcomes that are done (or whose done-marks were
   * lost, replayed idempotently); an append after it is fsynced with the file's new size anyway.
   */
  long truncate() throws IOException {
    try {
      FileChannel ch = channel(-1);
      ch.truncate(0);
      return 0L;
    } catch (IOException | RuntimeException e) {
      closeQuietly();
      throw e;
    }
  }

  /** Atomic replacement: write and fsync a temporary file, rename it over the journal, fsync the directory. */
  long rewrite(List<byte[]> records) throws IOException {
    // Created 0600 (the journal it replaces is then 0600 too, whatever an older version left).
    try (FileChannel t = PrivateFiles.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
        StandardOpenOption.WRITE)) {
      for (byte[] r : records) {
        ByteBuffer b = ByteBuffer.wrap(r);
        while (b.hasRemaining()) {
          t.write(b);
        }
      }
      t.force(true); // the rename must never expose a file whose contents are not on disk
    }
    closeQuietly();
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    // Without this, a crash could bring back the old directory entry while appends went to the new file.
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
    channel = opener.open(file);
    return channel.size();
  }

  /** The file as it is, a torn last record (at {@code tornAt}, or -1 for none) cut off; answers its size. */
  long keepAsItIs(long tornAt) throws IOException {
    closeQuietly();
    FileChannel ch = channel(-1);
    if (tornAt >= 0) {
      ch.truncate(tornAt);
    }
    return ch.size();
  }

  void close() throws IOException {
    if (channel != null) {
      channel.close();
      channel = null;
    }
  }

  private void closeQuietly() {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // already failing; the next write reopens
      }
      channel = null;
    }
  }
}
