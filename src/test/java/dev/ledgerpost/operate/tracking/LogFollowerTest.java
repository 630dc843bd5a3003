package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The follower's file handling: new lines, a line being written, rotation by rename and by copytruncate, a restart, and a
 * restart after the file was rotated and compressed (or copied and truncated) meanwhile.
 */
class LogFollowerTest {
  @TempDir
  Path dir;

  private static void append(Path f, String text) throws Exception {
    Files.writeString(f, text, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  @Test
  void itAnswersCompleteLinesOnlyAndFollowsARenameToItsEndThenTheNewFile() throws Exception {
    Path log = dir.resolve("mail.log");
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).as("no file yet").isEmpty();
      append(log, "one\ntwo\nthr");
      assertThat(f.poll().lines()).containsExactly("one", "two");
      assertThat(f.poll().lines()).isEmpty();
      append(log, "ee\r\n");
      assertThat(f.poll().lines()).containsExactly("three");
      append(log, "four\nfive-unfinished");
      Files.move(log, dir.resolve("mail.log.1"));
      append(log, "new-one\n");
      LogFollower.Chunk drained = f.poll();
      assertThat(drained.lines()).as("the old file to its end, an unfinished last line too").containsExactly("four", "five-unfinished");
      assertThat(drained.position().offset()).isZero();
      assertThat(drained.position().fileKey()).isNotEqualTo(null);
      assertThat(f.poll().lines()).containsExactly("new-one");
    }
  }

  @Test
  void aFileTruncatedInPlaceIsReadAgainFromItsStart() throws Exception {
    Path log = dir.resolve("mail.log");
    append(log, "a\nb\n");
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).containsExactly("a", "b");
      Files.write(log, new byte[0], StandardOpenOption.TRUNCATE_EXISTING); // copytruncate
      append(log, "c\n");
      assertThat(f.poll().lines()).containsExactly("c");
    }
  }

  @Test
  void aRestartResumesAtItsPositionInTheSameFileAndAtTheStartOfAnother() throws Exception {
    Path log = dir.resolve("mail.log");
    append(log, "a\nb\n");
    LogFollower.Position at;
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).containsExactly("a", "b");
      at = f.position();
    }
    append(log, "c\n");
    try (LogFollower f = new LogFollower(log, at)) {
      assertThat(f.poll().lines()).containsExactly("c");
    }
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, "d\n");
    try (LogFollower f = new LogFollower(log, at)) {
      assertThat(f.poll().lines()).as("the last run's file, rotated meanwhile: its end first").containsExactly("c");
      assertThat(f.poll().lines()).as("then the new file from its start").containsExactly("d");
    }
    Files.delete(dir.resolve("mail.log.1"));
    try (LogFollower f = new LogFollower(log, at)) {
      assertThat(f.poll().lines()).as("that file gone: the new one from its start").containsExactly("d");
    }
    try (LogFollower f = new LogFollower(log, new LogFollower.Position(at.fileKey(), 1 << 20))) {
      assertThat(f.poll().lines()).as("a position past the end is no position").containsExactly("d");
    }
  }

  @Test
  void aBacklogIsTakenInBoundedSteps() throws Exception {
    Path log = dir.resolve("mail.log");
    String line = "x".repeat(99) + "\n";
    append(log, line.repeat(LogFollower.MAX_READ / 100 * 3));
    int total = 0;
    try (LogFollower f = new LogFollower(log, null)) {
      for (int i = 0; i < 10; i++) {
        int n = f.poll().lines().size();
        assertThat(n * 100).isLessThanOrEqualTo(LogFollower.MAX_READ);
        total += n;
      }
    }
    assertThat(total).isEqualTo(LogFollower.MAX_READ / 100 * 3);
  }

  /** logrotate's {@code compress}: the rotated file gzip'd (a new file) and the uncompressed one removed. */
  private static void gzip(Path from, Path to) throws Exception {
    try (var out = new GZIPOutputStream(Files.newOutputStream(to))) {
      Files.copy(from, out);
    }
    Files.delete(from);
  }

  /** Every line the follower answers until it has nothing more, polled at most {@code polls} times. */
  private static List<String> drain(LogFollower f, int polls) throws Exception {
    List<String> all = new ArrayList<>();
    for (int i = 0; i < polls; i++) {
      all.addAll(f.poll().lines());
    }
    return all;
  }

  @Test
  void aRestartReadsTheUnreadEndOfItsFileRotatedAndGzippedMeanwhileThenTheNewFile() throws Exception {
    for (String rotated : List.of("mail.log.1.gz", "mail.log-20261204.gz")) {
      Path log = dir.resolve("mail.log");
      String before = "early line\n".repeat(1000); // more than the window before the position
      append(log, before);
      LogFollower.Position at;
      try (LogFollower f = new LogFollower(log, null)) {
        assertThat(f.poll().lines()).hasSize(1000);
        at = f.position();
      }
      assertThat(at.window()).hasSize(64);
      append(log, "after-1\nafter-2-unfinished");
      Files.move(log, dir.resolve("mail.log.1"));
      gzip(dir.resolve("mail.log.1"), dir.resolve(rotated));
      append(log, "new-1\n");
      try (LogFollower f = new LogFollower(log, at)) {
        LogFollower.Chunk first = f.poll();
        assertThat(first.lost()).isNull();
        assertThat(first.lines()).as(rotated + ": its unread end, an unfinished last line too").containsExactly("after-1", "after-2-unfinished");
        assertThat(drain(f, 3)).as("then the new file from its start, once").containsExactly("new-1");
      }
      Files.delete(dir.resolve(rotated));
      Files.delete(log);
    }
  }

  @Test
  void aRestartInsideTheGzippedFileResumesThere() throws Exception {
    Path log = dir.resolve("mail.log");
    String line = "y".repeat(99) + "\n";
    append(log, "first\n");
    LogFollower.Position at;
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).containsExactly("first");
      at = f.position();
    }
    int n = LogFollower.MAX_READ / 100 * 2; // two reads' worth of unread lines
    append(log, line.repeat(n));
    Files.move(log, dir.resolve("mail.log.1"));
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.1.gz"));
    append(log, "new\n");
    LogFollower.Position inside;
    int read;
    try (LogFollower f = new LogFollower(log, at)) {
      read = f.poll().lines().size();
      inside = f.position();
    }
    assertThat(read).isPositive().isLessThan(n);
    assertThat(inside.fileKey()).isEqualTo(at.fileKey());
    try (LogFollower f = new LogFollower(log, inside)) {
      List<String> rest = drain(f, 4);
      assertThat(rest).hasSize(n - read + 1);
      assertThat(rest.get(rest.size() - 1)).isEqualTo("new");
    }
  }

  @Test
  void aCopyTruncatedThenGzippedWhileAwayIsFoundByItsBytesNotByTheInodeThePathKept() throws Exception {
    Path log = dir.resolve("mail.log");
    append(log, "a\nb\n");
    LogFollower.Position at;
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).containsExactly("a", "b");
      at = f.position();
    }
    append(log, "c\n");
    Files.copy(log, dir.resolve("mail.log.1")); // copytruncate: a copy, then the file cut to nothing in place
    Files.write(log, new byte[0], StandardOpenOption.TRUNCATE_EXISTING);
    append(log, "d-longer-than-what-was-there\n");
    try (LogFollower f = new LogFollower(log, at)) {
      assertThat(drain(f, 3)).as("the copy's end, then the path's file from its start").containsExactly("c", "d-longer-than-what-was-there");
    }
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.1.gz"));
    try (LogFollower f = new LogFollower(log, at)) {
      assertThat(drain(f, 3)).as("compressed too").containsExactly("c", "d-longer-than-what-was-there");
    }
  }

  @Test
  void aFileThatCannotBeFoundIsSaidToBeLostOnce() throws Exception {
    Path log = dir.resolve("mail.log");
    append(log, "a\nb\n");
    LogFollower.Position at;
    try (LogFollower f = new LogFollower(log, null)) {
      f.poll();
      at = f.position();
    }
    append(log, "c\n");
    Files.move(log, dir.resolve("mail.log.1"));
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.2.gz"));
    Files.writeString(dir.resolve("mail.log.1.gz"), "not gzip at all\n"); // a sibling that is no gzip: passed over
    try (var out = new GZIPOutputStream(Files.newOutputStream(dir.resolve("mail.log-20261203.gz")))) {
      out.write("another file\n".getBytes(StandardCharsets.UTF_8));
    }
    Files.delete(dir.resolve("mail.log.2.gz"));
    append(log, "d\n");
    try (LogFollower f = new LogFollower(log, at)) {
      LogFollower.Chunk first = f.poll();
      assertThat(first.lost()).contains("mail.log was read to byte 4 of file " + at.fileKey(), "unknown to tracking");
      assertThat(first.lines()).containsExactly("d");
      assertThat(f.poll().lost()).isNull();
    }
  }
}
