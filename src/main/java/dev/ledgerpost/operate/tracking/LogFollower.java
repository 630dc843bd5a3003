package dev.ledgerpost.operate.tracking;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Follows one log file as {@code tail -F} does (docs/design.md §8.13): each {@link #poll} answers the complete lines
 * written since the last, and the position after them. A file renamed away (logrotate's default, Postfix's {@code
 * postlog} rotation) is read to its end through the handle still open, then the new file at the path from its start;
 * a file cut short in place (logrotate's {@code copytruncate}) is read again from its start. A line still being written
 * (no newline yet) waits for the next poll.
 *
 * <p>A position names the file by its device and inode and by the SHA-256 of the {@link #WINDOW} bytes before the
 * offset, so that a restart resumes where the last run stopped only in the same file. When the file at the path is not
 * that one (renamed, copied and truncated, or renamed and compressed while we were away), it is looked for among the
 * path's rotated siblings: an uncompressed one by its inode or its window, a gzip'd one ({@code mail.log.1.gz}, {@code
 * mail.log-20261204.gz}) by its window, read through the decompressor to the offset. Its end is read first, then the
 * file at the path from its start. Not found, the chunk says what is lost ({@link Chunk#lost}).
 *
 * <p>Blocking: called on a worker, one poll at a time. Not thread-safe.
 */
final class LogFollower implements AutoCloseable {
  /**
   * Where a follower is: the file (device and inode), the byte offset after the last line it answered and {@code window},
   * the hex SHA-256 of the up to {@link #WINDOW} bytes before that offset (null: recorded before V114, not checked).
   */
  record Position(String fileKey, long offset, String window) {
    Position(String fileKey, long offset) {
      this(fileKey, offset, null);
    }
  }

  /** The complete lines of one poll and the position after them; {@code lost}: a sentence for the log, else null. */
  record Chunk(List<String> lines, Position position, String lost) {
    Chunk(List<String> lines, Position position) {
      this(lines, position, null);
    }
  }

  /** Bytes read at most per poll, so that a large backlog is taken in steps (each step's facts one transaction). */
  static final int MAX_READ = 1 << 20;
  /** The bytes before a position that identify its file: a few dozen Postfix lines, with their times and queue ids. */
  static final int WINDOW = 4096;
  /** Rotated siblings looked at for the last run's file, newest first: a restart after more rotations than this loses it. */
  static final int MAX_CANDIDATES = 8;
  /** A longer "line" is cut: the parser ignores lines over 8 KB anyway. */
  private static final int MAX_LINE = 64 * 1024;
  private static final Pattern COMPRESSED = Pattern.compile(".*\\.(gz|xz|bz2|zst|lz4|Z)$");

  private final Path path;
  /** The file being read: an open handle, or the decompressed stream of a rotated gzip'd one (then channel is null). */
  private FileChannel channel;
  private InputStream gz;
  private Path gzPath;
  /** The bytes of a gzip'd file read past the last complete line: read first by the next poll. */
  private byte[] pending = new byte[0];
  private String fileKey;
  private long offset;
  /** The up to {@link #WINDOW} bytes before the offset, and their hash once asked for. */
  private byte[] tail = new byte[0];
  private String window;
  private Position resume;
  private String lost;

  /** {@code resume}: the position a previous run recorded, or null to start at the file's beginning. */
  LogFollower(Path path, Position resume) {
    this.path = path;
    this.resume = resume;
  }

  Chunk poll() throws IOException {
    if (gz != null) {
      return pollCompressed();
    }
    if (channel == null && !open()) {
      return new Chunk(List.of(), null, takeLost());
    }
    if (gz != null) {
      return pollCompressed(); // the last run's file, found compressed
    }
    String current = keyAtPath();
    if (current != null && !current.equals(fileKey)) {
      // Renamed away: what is left of the old file first, then the new one from its start on the next poll.
      List<String> rest = read(true);
      if (offset < channel.size()) {
        return new Chunk(rest, position(), takeLost()); // more than a poll's worth left in the old file
      }
      channel.close();
      channel = null;
      resume = new Position(current, 0);
      open();
      return new Chunk(rest, position(), takeLost());
    }
    if (channel.size() < offset) {
      restart(0); // truncated in place (copytruncate): the file starts again
    }
    return new Chunk(read(false), position(), takeLost());
  }

  Position position() {
    if (channel == null && gz == null) {
      return null;
    }
    if (window == null) {
      window = sha256(tail, 0, tail.length);
    }
    return new Position(fileKey, offset, window);
  }

  private String takeLost() {
    String l = lost;
    lost = null;
    return l;
  }

  private void restart(long at) {
    offset = at;
    tail = new byte[0];
    window = null;
  }

  private boolean open() throws IOException {
    String key = keyAtPath();
    if (key == null) {
      return false;
    }
    FileChannel c;
    try {
      c = FileChannel.open(path, StandardOpenOption.READ);
    } catch (NoSuchFileException e) {
      return false;
    }
    Position from = resume;
    resume = null;
    channel = c;
    fileKey = key;
    restart(0);
    if (from == null) {
      return true;
    }
    if (from.fileKey().equals(key) && from.offset() <= c.size()) {
      byte[] before = windowBefore(c, from.offset());
      if (from.window() == null || sha256(before, 0, before.length).equals(from.window())) {
        offset = from.offset();
        tail = before;
        return true;
      }
    }
    // The file at the path is not the last run's (rotated while we were away, or copied and truncated): that one first.
    try {
      if (openRotated(from)) {
        c.close();
        return true;
      }
    } catch (IOException e) {
      channel = c;
      fileKey = key;
      restart(0);
      lost = lostSentence(from, "its search failed (" + e.getMessage() + ")");
      return true;
    }
    if (from.offset() > 0 || !from.fileKey().equals(key)) {
      lost = lostSentence(from, "it is neither at the path nor among its rotated siblings (uncompressed, or gzip'd with the"
          + " same bytes before the position)");
    }
    return true;
  }

  private String lostSentence(Position from, String why) {
    return "tracking: " + path + " was read to byte " + from.offset() + " of file " + from.fileKey() + " before this start, and "
        + why + ": what that file held after byte " + from.offset() + " is unknown to tracking (its facts, if any, are"
        + " missing); following " + path + " from its start";
  }

  /**
   * The file the last run was reading, among the path's rotated siblings ({@code mail.log.1}, {@code mail.log-20261204},
   * {@code mail.log.1.gz}, {@code mail.log-20261204.gz}; other compressions cannot be read), newest first: an
   * uncompressed one with its device and inode and the same window (a copy, {@code copytruncate}'s, by the window alone),
   * a gzip'd one by the window, decompressed up to the offset. Opened at the recorded offset.
   */
  private boolean openRotated(Position from) throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    String name = path.getFileName().toString();
    if (dir == null) {
      return false;
    }
    record Candidate(Path path, FileTime modified) {}
    List<Candidate> siblings = new ArrayList<>();
    try (var list = Files.list(dir)) {
      for (Path p : (Iterable<Path>) list::iterator) {
        String n = p.getFileName().toString();
        boolean rotatedName = n.startsWith(name + ".") || n.startsWith(name + "-");
        if (!rotatedName || (COMPRESSED.matcher(n).matches() && !n.endsWith(".gz"))) {
          continue;
        }
        try {
          BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
          if (a.isRegularFile()) {
            siblings.add(new Candidate(p, a.lastModifiedTime()));
          }
        } catch (IOException e) {
          // gone meanwhile: not it
        }
      }
    }
    siblings.sort(Comparator.comparing(Candidate::modified).reversed());
    for (Candidate cand : siblings.subList(0, Math.min(MAX_CANDIDATES, siblings.size()))) {
      Path p = cand.path();
      if (p.getFileName().toString().endsWith(".gz")) {
        if (from.window() != null && from.offset() > 0 && openCompressed(p, from)) {
          return true;
        }
        continue;
      }
      Object key;
      try {
        key = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
      } catch (IOException e) {
        continue;
      }
      boolean sameInode = key != null && key.toString().equals(from.fileKey());
      if (!sameInode && (from.window() == null || from.offset() == 0)) {
        continue; // nothing to know a copy by
      }
      FileChannel c = FileChannel.open(p, StandardOpenOption.READ);
      byte[] before = from.offset() <= c.size() ? windowBefore(c, from.offset()) : null;
      if (before != null && (from.window() == null ? sameInode : sha256(before, 0, before.length).equals(from.window()))) {
        channel = c;
        fileKey = key == null ? from.fileKey() : key.toString(); // a copy's own: the path's file is another, read after it
        offset = from.offset();
        tail = before;
        window = null;
        return true;
      }
      c.close();
    }
    return false;
  }

  /** Whether the gzip'd file holds the position's window before its offset; if so it is kept open there. */
  private boolean openCompressed(Path p, Position from) throws IOException {
    InputStream raw = Files.newInputStream(p);
    InputStream in = raw;
    boolean kept = false;
    try {
      in = new BufferedInputStream(new GZIPInputStream(raw, 64 * 1024), 64 * 1024); // reads the header: may refuse it
      long start = Math.max(0, from.offset() - WINDOW);
      long skipped = 0;
      byte[] skip = new byte[64 * 1024];
      while (skipped < start) { // decompressed and dropped: bounded memory whatever the offset
        int r = in.read(skip, 0, (int) Math.min(skip.length, start - skipped));
        if (r < 0) {
          return false;
        }
        skipped += r;
      }
      byte[] before = in.readNBytes((int) (from.offset() - start));
      if (before.length != from.offset() - start || !sha256(before, 0, before.length).equals(from.window())) {
        return false;
      }
      channel = null;
      gz = in;
      gzPath = p;
      pending = new byte[0];
      fileKey = from.fileKey();
      offset = from.offset();
      tail = before;
      window = null;
      kept = true;
      return true;
    } catch (ZipException | java.io.EOFException e) {
      return false; // not gzip, or cut short: not it
    } finally {
      if (!kept) {
        in.close();
      }
    }
  }

  /** The gzip'd file's next lines; at its end (an unfinished last line too) the file at the path from its start. */
  private Chunk pollCompressed() throws IOException {
    byte[] buf = new byte[MAX_READ];
    int n = pending.length;
    System.arraycopy(pending, 0, buf, 0, n);
    boolean end = false;
    try {
      while (n < buf.length) {
        int r = gz.read(buf, n, buf.length - n);
        if (r < 0) {
          end = true;
          break;
        }
        n += r;
      }
    } catch (java.io.EOFException e) {
      end = true; // a gzip file cut short: what it held is read; the rest is not there to read
      lost = "tracking: " + gzPath + " ends before its gzip trailer: read to byte " + (offset + n) + " of its content";
    }
    List<String> lines = new ArrayList<>();
    int start = split(buf, n, lines);
    if ((end && start < n) || (start == 0 && n >= MAX_LINE)) {
      lines.add(text(buf, start, n));
      start = n;
    }
    pending = Arrays.copyOfRange(buf, start, n);
    consumed(buf, start);
    if (!end) {
      return new Chunk(lines, position(), takeLost());
    }
    gz.close();
    gz = null;
    gzPath = null;
    pending = new byte[0];
    open(); // resume is null: the file at the path from its start
    return new Chunk(lines, position(), takeLost());
  }

  /** The device and inode of the file at the path now, or null when there is none. */
  private String keyAtPath() throws IOException {
    try {
      Object key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
      return key == null ? "mtime-less" : key.toString();
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  /** The complete lines from the offset on (at most {@link #MAX_READ} bytes); {@code toEnd}: a last unfinished one too. */
  private List<String> read(boolean toEnd) throws IOException {
    List<String> lines = new ArrayList<>();
    long size = channel.size();
    if (size <= offset) {
      return lines;
    }
    ByteBuffer buf = ByteBuffer.allocate((int) Math.min(MAX_READ, size - offset));
    channel.read(buf, offset);
    byte[] bytes = buf.array();
    int n = buf.position();
    int start = split(bytes, n, lines);
    if ((toEnd && n == size - offset && start < n) || (start == 0 && n >= MAX_LINE)) {
      lines.add(text(bytes, start, n)); // the old file's last line, or a "line" too long to wait for
      start = n;
    }
    consumed(bytes, start);
    return lines;
  }

  /** Adds the complete lines of {@code bytes[0, n)}; answers where the first incomplete one starts. */
  private static int split(byte[] bytes, int n, List<String> lines) {
    int start = 0;
    for (int i = 0; i < n; i++) {
      if (bytes[i] == '\n') {
        lines.add(text(bytes, start, i));
        start = i + 1;
      }
    }
    return start;
  }

  /** The offset moves past {@code bytes[0, n)}, and the window with it. */
  private void consumed(byte[] bytes, int n) {
    if (n == 0) {
      return;
    }
    offset += n;
    int fromNew = Math.min(n, WINDOW);
    int fromOld = Math.min(tail.length, WINDOW - fromNew);
    byte[] t = new byte[fromOld + fromNew];
    System.arraycopy(tail, tail.length - fromOld, t, 0, fromOld);
    System.arraycopy(bytes, n - fromNew, t, fromOld, fromNew);
    tail = t;
    window = null;
  }

  private static byte[] windowBefore(FileChannel c, long at) throws IOException {
    int len = (int) Math.min(WINDOW, at);
    ByteBuffer b = ByteBuffer.allocate(len);
    while (b.hasRemaining()) {
      if (c.read(b, at - len + b.position()) < 0) {
        break;
      }
    }
    return Arrays.copyOf(b.array(), b.position());
  }

  static String sha256(byte[] bytes, int from, int len) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      d.update(bytes, from, len);
      return HexFormat.of().formatHex(d.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String text(byte[] bytes, int from, int to) {
    int end = to > from && bytes[to - 1] == '\r' ? to - 1 : to;
    return new String(bytes, from, Math.min(end - from, MAX_LINE), StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws IOException {
    if (channel != null) {
      channel.close();
      channel = null;
    }
    if (gz != null) {
      gz.close();
      gz = null;
    }
  }
}
