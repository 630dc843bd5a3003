package dev.ledgerpost.operate.tracking;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * Follows one log file as {@code tail -F} does (docs/design.md §8.13): each {@link #poll} answers the complete lines
 * written since the last, and the position after them. A file renamed away (logrotate's default, Postfix's {@code
 * postlog} rotation) is read to its end through the handle still open, then the new file at the path from its start;
 * a file cut short in place (logrotate's {@code copytruncate}) is read again from its start. A line still being written
 * (no newline yet) waits for the next poll. The position names the file by its device and inode, so that a restart
 * resumes where the last run stopped only in the same file; renamed meanwhile, that file is found among the path's
 * uncompressed rotated siblings and its end read first.
 *
 * <p>Blocking: called on a worker, one poll at a time. Not thread-safe.
 */
final class LogFollower implements AutoCloseable {
  /** Where a follower is: the file (device and inode) and the byte offset after the last line it answered. */
  record Position(String fileKey, long offset) {}

  /**
   * The complete lines of one poll, the position after each of them ({@code after}, same size: a caller that records
   * only some of the lines saves the position after the last it recorded), and the position after them all.
   */
  record Chunk(List<String> lines, List<Position> after, Position position) {}

  /** Bytes read at most per poll, so that a large backlog is taken in steps (each step's facts one transaction). */
  static final int MAX_READ = 1 << 20;
  /** A longer "line" is cut: the parser ignores lines over 8 KB anyway. */
  private static final int MAX_LINE = 64 * 1024;

  private final Path path;
  private FileChannel channel;
  private String fileKey;
  private long offset;
  private Position resume;

  /** {@code resume}: the position a previous run recorded, or null to start at the file's beginning. */
  LogFollower(Path path, Position resume) {
    this.path = path;
    this.resume = resume;
  }

  Chunk poll() throws IOException {
    if (channel == null && !open()) {
      return new Chunk(List.of(), List.of(), null);
    }
    String current = keyAtPath();
    if (current != null && !current.equals(fileKey)) {
      // Renamed away: what is left of the old file first, then the new one from its start on the next poll.
      List<Position> after = new ArrayList<>();
      List<String> rest = read(true, after);
      if (offset < channel.size()) {
        return new Chunk(rest, after, position()); // more than a poll's worth left in the old file
      }
      channel.close();
      channel = null;
      resume = new Position(current, 0);
      open();
      return new Chunk(rest, after, position());
    }
    if (channel.size() < offset) {
      offset = 0; // truncated in place (copytruncate): the file starts again
    }
    List<Position> after = new ArrayList<>();
    List<String> lines = read(false, after);
    return new Chunk(lines, after, position());
  }

  Position position() {
    return channel == null ? null : new Position(fileKey, offset);
  }

  private boolean open() throws IOException {
    String key = keyAtPath();
    if (key == null) {
      return false;
    }
    if (resume != null && !resume.fileKey().equals(key) && openRotated()) {
      return true; // the file of the last run, renamed while we were away: its end first, then the new one
    }
    try {
      channel = FileChannel.open(path, StandardOpenOption.READ);
    } catch (NoSuchFileException e) {
      return false;
    }
    fileKey = key;
    offset = resume != null && resume.fileKey().equals(key) && resume.offset() <= channel.size() ? resume.offset() : 0;
    resume = null;
    return true;
  }

  /**
   * The file the last run was reading, found among the path's rotated siblings ({@code mail.log.1}, {@code
   * mail.log-20261204}; not compressed ones) by its device and inode, opened at the recorded offset.
   */
  private boolean openRotated() throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    String name = path.getFileName().toString();
    if (dir == null) {
      return false;
    }
    List<Path> siblings;
    try (var list = Files.list(dir)) {
      siblings = list.filter(p -> {
        String n = p.getFileName().toString();
        return (n.startsWith(name + ".") || n.startsWith(name + "-")) && !n.matches(".*\\.(gz|xz|bz2|zst|lz4)$");
      }).toList();
    }
    for (Path p : siblings) {
      Object key;
      try {
        key = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
      } catch (IOException e) {
        continue;
      }
      if (key != null && key.toString().equals(resume.fileKey()) && Files.size(p) >= resume.offset()) {
        channel = FileChannel.open(p, StandardOpenOption.READ);
        fileKey = resume.fileKey();
        offset = resume.offset();
        resume = null;
        return true;
      }
    }
    return false;
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

  /**
   * The complete lines from the offset on (at most {@link #MAX_READ} bytes); {@code toEnd}: a last unfinished one too.
   * {@code after} gets the position after each line.
   */
  private List<String> read(boolean toEnd, List<Position> after) throws IOException {
    List<String> lines = new ArrayList<>();
    long size = channel.size();
    if (size <= offset) {
      return lines;
    }
    ByteBuffer buf = ByteBuffer.allocate((int) Math.min(MAX_READ, size - offset));
    channel.read(buf, offset);
    byte[] bytes = buf.array();
    int n = buf.position();
    int start = 0;
    for (int i = 0; i < n; i++) {
      if (bytes[i] == '\n') {
        lines.add(text(bytes, start, i));
        start = i + 1;
        after.add(new Position(fileKey, offset + start));
      }
    }
    if ((toEnd && n == size - offset && start < n) || (start == 0 && n >= MAX_LINE)) {
      lines.add(text(bytes, start, n)); // the old file's last line, or a "line" too long to wait for
      start = n;
      after.add(new Position(fileKey, offset + start));
    }
    offset += start;
    return lines;
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
  }
}
