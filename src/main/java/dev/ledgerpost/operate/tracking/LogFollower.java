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
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
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
 * mail.log-20261204.gz}) by its window, read through the decompressor to the offset. Its end is read first, then every
 * rotated sibling newer than it, oldest first and in full (several rotations while we were away: {@link #rotationOrder}),
 * then the file at the path from its start. Not found, the chunk says what is lost ({@link Chunk#lost}); so does a sibling
 * of that chain that is gone before it is reached.
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
  /** After the followed file's name: logrotate's numbered form ({@code .3}, {@code .3.gz}) and its dateext form. */
  private static final Pattern NUMBERED = Pattern.compile("\\.(\\d{1,9})(\\.gz)?");
  private static final Pattern DATED = Pattern.compile("-(.+?)(\\.gz)?");

  /** A rotated sibling as listed: its name then, its device and inode (which a rename keeps) and its modification time. */
  record Sibling(Path path, String key, FileTime modified) {
    boolean compressed() {
      return path.getFileName().toString().endsWith(".gz");
    }
  }

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
  /**
   * The rotated siblings still to be read in full after the file being read, oldest first: those newer than the one a
   * restart resumed in. Each is known by its inode, so a rename meanwhile (the next rotation's numbers) does not lose it.
   */
  private final ArrayDeque<Sibling> chain = new ArrayDeque<>();
  /** The inode of the file at the path when the chain was listed: rotated while the chain is read, it is read in full too. */
  private String chainPathKey;
  /** Whether the file being read is a rotated sibling: read to its end, then the chain's next file or the path's. */
  private boolean rotated;
  /**
   * While a chain file is open and nothing of it is consumed yet: the end of the file before it, answered as the position.
   * Offset 0 names no bytes, so a restart could not know a gzip'd file by it; the previous file's end it finds again.
   */
  private Position held;

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
    if (rotated) {
      // A rotated sibling (the last run's file, or one newer than it): to its end, an unfinished last line too, then the next.
      List<String> rest = read(true);
      if (offset < channel.size()) {
        return new Chunk(rest, position(), takeLost());
      }
      next();
      return new Chunk(rest, position(), takeLost());
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
    if (held != null && offset == 0) {
      return held;
    }
    if (channel == null && gz == null) {
      return null;
    }
    if (window == null) {
      window = sha256(tail, 0, tail.length);
    }
    return new Position(fileKey, offset, window);
  }

  private void addLost(String sentence) {
    lost = lost == null ? sentence : lost + "; " + sentence;
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
      chain.clear();
      rotated = false;
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
    List<Sibling> all = siblings();
    List<Sibling> newest = new ArrayList<>(all);
    newest.sort(Comparator.comparing(Sibling::modified).reversed());
    for (Sibling cand : newest.subList(0, Math.min(MAX_CANDIDATES, newest.size()))) {
      Path p = cand.path();
      if (cand.compressed()) {
        if (from.window() != null && from.offset() > 0 && openCompressed(p, from)) {
          planChain(all, cand);
          return true;
        }
        continue;
      }
      String key = cand.key();
      boolean sameInode = key != null && key.equals(from.fileKey());
      if (!sameInode && (from.window() == null || from.offset() == 0)) {
        continue; // nothing to know a copy by
      }
      FileChannel c;
      try {
        c = FileChannel.open(p, StandardOpenOption.READ);
      } catch (NoSuchFileException e) {
        continue; // gone meanwhile: not it
      }
      byte[] before = from.offset() <= c.size() ? windowBefore(c, from.offset()) : null;
      if (before != null && (from.window() == null ? sameInode : sha256(before, 0, before.length).equals(from.window()))) {
        channel = c;
        fileKey = key == null ? from.fileKey() : key; // a copy's own: the path's file is another, read after it
        offset = from.offset();
        tail = before;
        window = null;
        rotated = true;
        planChain(all, cand);
        return true;
      }
      c.close();
    }
    return false;
  }

  /** The path's rotated siblings now, plain or gzip'd (other compressions cannot be read), regular files only. */
  private List<Sibling> siblings() throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    String name = path.getFileName().toString();
    List<Sibling> siblings = new ArrayList<>();
    if (dir == null) {
      return siblings;
    }
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
            siblings.add(new Sibling(p, a.fileKey() == null ? null : a.fileKey().toString(), a.lastModifiedTime()));
          }
        } catch (IOException e) {
          // gone meanwhile: not one
        }
      }
    }
    return siblings;
  }

  /**
   * The files rotated after {@code found}, to be read in full after its unread end, oldest first: several rotations
   * while we were away. Not the file at the path (read last), not {@code found} under another form ({@code mail.log.1}
   * and the {@code mail.log.1.gz} being made of it), and of a file under both forms, the uncompressed one (a gzip'd file
   * beside its source may be unfinished). At most {@link #MAX_CANDIDATES}.
   */
  private void planChain(List<Sibling> all, Sibling found) throws IOException {
    chain.clear();
    String atPath = keyAtPath();
    chainPathKey = atPath;
    String name = path.getFileName().toString();
    List<Sibling> ordered = rotationOrder(name, all);
    int at = ordered.indexOf(found);
    Set<String> plain = new HashSet<>();
    for (Sibling s : ordered) {
      if (!s.compressed()) {
        plain.add(s.path().getFileName().toString());
      }
    }
    String foundBase = base(found);
    for (Sibling s : ordered.subList(at + 1, ordered.size())) {
      String b = base(s);
      if (b.equals(foundBase) || (s.key() != null && (s.key().equals(atPath) || s.key().equals(found.key())))
          || (s.compressed() && plain.contains(b)) || chain.size() >= MAX_CANDIDATES) {
        continue;
      }
      chain.add(s);
    }
  }

  private static String base(Sibling s) {
    String n = s.path().getFileName().toString();
    return s.compressed() ? n.substring(0, n.length() - ".gz".length()) : n;
  }

  /**
   * The siblings of the file {@code name}, oldest rotation first. All numbered ({@code mail.log.3.gz}, {@code mail.log.2},
   * {@code mail.log.1}): by number, highest first. All dateext ({@code mail.log-20261202}, {@code mail.log-20261203.gz}):
   * by what follows the dash, ascending (logrotate's dates sort as text). A mix, or another name ({@code mail.log.old}),
   * says nothing by its name: by modification time, then by name. A file under both forms (plain and gzip'd) has the
   * plain one first.
   */
  static List<Sibling> rotationOrder(String name, List<Sibling> siblings) {
    List<Sibling> ordered = new ArrayList<>(siblings);
    boolean numbered = true;
    boolean dated = true;
    for (Sibling s : ordered) {
      String rest = s.path().getFileName().toString().substring(name.length());
      numbered &= NUMBERED.matcher(rest).matches();
      dated &= DATED.matcher(rest).matches();
    }
    Comparator<Sibling> plainFirst = Comparator.comparing(Sibling::compressed);
    if (numbered) {
      ordered.sort(Comparator.comparing((Sibling s) -> -rotationNumber(name, s)).thenComparing(plainFirst));
    } else if (dated) {
      ordered.sort(Comparator.comparing((Sibling s) -> dateSuffix(name, s)).thenComparing(plainFirst));
    } else {
      ordered.sort(Comparator.comparing(Sibling::modified).thenComparing(s -> s.path().getFileName().toString()));
    }
    return ordered;
  }

  private static long rotationNumber(String name, Sibling s) {
    Matcher m = NUMBERED.matcher(s.path().getFileName().toString().substring(name.length()));
    return m.matches() ? Long.parseLong(m.group(1)) : 0;
  }

  private static String dateSuffix(String name, Sibling s) {
    Matcher m = DATED.matcher(s.path().getFileName().toString().substring(name.length()));
    return m.matches() ? m.group(1) : "";
  }

  /**
   * The file being read is done: the chain's next file from its start (found by its inode: a rotation meanwhile may
   * have renamed it; gone, the loss is said and the next one taken), else the file at the path from its start, after
   * the file that was at the path when the chain was listed if that one was rotated away meanwhile.
   */
  private void next() throws IOException {
    Position end = position();
    closeCurrent();
    while (true) {
      while (!chain.isEmpty()) {
        Sibling s = chain.poll();
        Path p = locate(s);
        try {
          if (p == null) {
            throw new NoSuchFileException(s.path().toString());
          }
          if (s.compressed()) {
            InputStream raw = Files.newInputStream(p);
            try {
              gz = new BufferedInputStream(new GZIPInputStream(raw, 64 * 1024), 64 * 1024);
            } catch (IOException e) {
              raw.close();
              throw e;
            }
            gzPath = p;
            pending = new byte[0];
          } else {
            channel = FileChannel.open(p, StandardOpenOption.READ);
          }
        } catch (NoSuchFileException e) {
          addLost("tracking: " + s.path() + ", rotated from " + path + " after the file a restart resumed in, is gone (the"
              + " rotate count reached meanwhile?): what it held is unknown to tracking (its facts, if any, are missing);"
              + " going on with the next");
          continue;
        } catch (ZipException | java.io.EOFException e) {
          addLost("tracking: " + s.path() + ", rotated from " + path + " after the file a restart resumed in, is not readable"
              + " gzip (" + e.getMessage() + "): what it held is unknown to tracking (its facts, if any, are missing);"
              + " going on with the next");
          continue;
        }
        fileKey = s.key() == null ? s.path().toString() : s.key();
        rotated = true;
        restart(0);
        held = end;
        return;
      }
      rotated = false;
      held = null;
      String now = keyAtPath();
      String before = chainPathKey;
      chainPathKey = null;
      if (before == null || before.equals(now)) {
        break;
      }
      // The file at the path when the chain was listed was rotated while it was read: it, and those after it, in full.
      List<Sibling> all = siblings();
      Sibling was = all.stream().filter(s -> before.equals(s.key())).findFirst().orElse(null);
      if (was == null) {
        break;
      }
      planChain(all, was);
      chain.addFirst(was);
    }
    resume = null;
    open();
  }

  /** Where a listed sibling is now: under its listed name if that is still its inode, else the sibling with its inode. */
  private Path locate(Sibling s) throws IOException {
    try {
      Object key = Files.readAttributes(s.path(), BasicFileAttributes.class).fileKey();
      if (s.key() == null || (key != null && key.toString().equals(s.key()))) {
        return s.path();
      }
    } catch (NoSuchFileException e) {
      // renamed or deleted: looked for by its inode
    }
    if (s.key() == null) {
      return null;
    }
    for (Sibling o : siblings()) {
      if (s.key().equals(o.key())) {
        return o.path();
      }
    }
    return null;
  }

  private void closeCurrent() throws IOException {
    closeFiles();
    gzPath = null; // set only beside gz
    pending = new byte[0];
  }

  /** Closes the plain file's channel or the gzip'd file's stream, whichever is open. */
  private void closeFiles() throws IOException {
    if (channel != null) {
      channel.close();
      channel = null;
    }
    if (gz != null) {
      gz.close();
      gz = null;
    }
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
      addLost("tracking: " + gzPath + " ends before its gzip trailer: read to byte " + (offset + n) + " of its content");
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
    next(); // the chain's next file, else the file at the path from its start
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
    held = null;
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
    closeFiles();
  }
}
