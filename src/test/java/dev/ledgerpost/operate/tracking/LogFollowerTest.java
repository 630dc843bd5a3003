package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The follower's file handling: new lines, a line being written, rotation by rename and by copytruncate, a restart, and a
 * restart after the file was rotated and compressed (or copied and truncated) meanwhile, and after several rotations
 * (the files between the last run's and the current one, oldest first; a restart anywhere in that chain).
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
    LogFollower.Position at = firstRun(log, "a", "b");
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
    LogFollower.Position at = firstRun(log, "first");
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
    LogFollower.Position at = firstRun(log, "a", "b");
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

  /** A file of lines {@code prefix-0 .. prefix-(n-1)}, each 100 bytes with its newline. */
  private static List<String> lines(String prefix, int n) {
    List<String> l = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String head = prefix + "-" + i + " ";
      l.add(head + "z".repeat(99 - head.length()));
    }
    return l;
  }

  private static String text(List<String> lines) {
    return String.join("\n", lines) + "\n";
  }

  /** Every position a chunk answered while the whole backlog was read, with the lines answered after it. */
  private record Step(LogFollower.Position position, List<String> rest) {}

  /**
   * Reads from {@code at} until nothing more comes, asserting the lines are {@code expected} exactly (once, in order) and
   * no loss is said; answers each chunk's position and the lines that were still to come after it.
   */
  private static List<Step> readAll(Path log, LogFollower.Position at, List<String> expected) throws Exception {
    List<String> all = new ArrayList<>();
    List<LogFollower.Position> positions = new ArrayList<>();
    List<Integer> counts = new ArrayList<>();
    try (LogFollower f = new LogFollower(log, at)) {
      for (int i = 0; i < 40; i++) {
        LogFollower.Chunk c = f.poll();
        assertThat(c.lost()).isNull();
        all.addAll(c.lines());
        positions.add(c.position());
        counts.add(all.size());
      }
    }
    assertThat(all).containsExactlyElementsOf(expected);
    List<Step> steps = new ArrayList<>();
    for (int i = 0; i < positions.size(); i++) {
      steps.add(new Step(positions.get(i), expected.subList(counts.get(i), expected.size())));
    }
    return steps;
  }

  /** The same modification time on every file: the order must come from the names. */
  private void sameMtime(String... names) throws Exception {
    FileTime t = FileTime.from(Instant.parse("2026-12-04T10:00:00Z"));
    for (String n : names) {
      Files.setLastModifiedTime(dir.resolve(n), t);
    }
  }

  /** A first run over {@code log}, from its start: its first poll reads exactly {@code lines}; the position it stopped at. */
  private static LogFollower.Position firstRun(Path log, String... lines) throws Exception {
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).containsExactly(lines);
      return f.position();
    }
  }

  /** The last run's position, after lines no restart reads again, in a fresh mail.log. */
  private LogFollower.Position followed(Path log) throws Exception {
    append(log, text(lines("seen", 50)));
    try (LogFollower f = new LogFollower(log, null)) {
      assertThat(f.poll().lines()).hasSize(50);
      return f.position();
    }
  }

  /**
   * Three rotations while away, numbered, with {@code compress} and {@code delaycompress}: the last run's file is now
   * mail.log.3.gz, then mail.log.2.gz, mail.log.1 and the current file. One of them more than a read's worth, so that
   * the chain's positions fall inside a gzip'd file too; a restart at every one of them reads the rest exactly once.
   */
  @Test
  void threeNumberedRotationsWhileAwayAreReadOldestFirstThenTheCurrentFileAndARestartAnywhereResumesThere() throws Exception {
    Path log = dir.resolve("mail.log");
    LogFollower.Position at = followed(log);
    List<String> end = lines("end", 3);
    List<String> r1 = lines("r1", LogFollower.MAX_READ / 100 * 3 / 2); // one and a half reads
    List<String> r2 = lines("r2", 4);
    List<String> cur = lines("cur", 2);
    append(log, text(end));
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, text(r1));
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.2.gz"));
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, text(r2));
    Files.move(dir.resolve("mail.log.2.gz"), dir.resolve("mail.log.3.gz"));
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.2.gz"));
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, text(cur));
    sameMtime("mail.log.3.gz", "mail.log.2.gz", "mail.log.1", "mail.log");
    List<String> expected = new ArrayList<>(end);
    expected.addAll(r1);
    expected.addAll(r2);
    expected.addAll(cur);

    List<Step> steps = readAll(log, at, expected);
    String current = Files.readAttributes(log, java.nio.file.attribute.BasicFileAttributes.class).fileKey().toString();
    assertThat(steps).as("a position at a file's start is the current file's (known by its inode), never a rotated one's")
        .allMatch(s -> s.position().offset() > 0 || s.position().fileKey().equals(current));
    for (Step step : steps) {
      if (!step.rest().isEmpty()) {
        assertThat(readAll(log, step.position(), step.rest())).as("a restart at " + step.position()).isNotEmpty();
      }
    }
  }

  /** The same with dateext names, compressed but the newest: by their dates, whatever their modification times. */
  @Test
  void threeDatedRotationsWhileAwayAreReadByTheirDatesThenTheCurrentFile() throws Exception {
    Path log = dir.resolve("mail.log");
    LogFollower.Position at = followed(log);
    List<String> end = lines("end", 3);
    List<String> d3 = lines("d3", 5);
    List<String> d4 = lines("d4", 5);
    List<String> cur = lines("cur", 2);
    append(log, text(end));
    Files.move(log, dir.resolve("mail.log-20261202"));
    gzip(dir.resolve("mail.log-20261202"), dir.resolve("mail.log-20261202.gz"));
    append(log, text(d3));
    Files.move(log, dir.resolve("mail.log-20261203"));
    gzip(dir.resolve("mail.log-20261203"), dir.resolve("mail.log-20261203.gz"));
    append(log, text(d4));
    Files.move(log, dir.resolve("mail.log-20261204"));
    append(log, text(cur));
    Files.setLastModifiedTime(dir.resolve("mail.log-20261204"), FileTime.from(Instant.parse("2026-12-01T00:00:00Z")));
    List<String> expected = new ArrayList<>(end);
    expected.addAll(d3);
    expected.addAll(d4);
    expected.addAll(cur);
    List<Step> steps = readAll(log, at, expected);
    for (Step step : steps) {
      if (!step.rest().isEmpty()) {
        readAll(log, step.position(), step.rest());
      }
    }
  }

  /**
   * While the chain is read another rotation comes: the sibling not reached yet is renamed (found again by its inode) or
   * compressed into a new file (gone: said once, naming it, and skipped), and the file that was at the path is rotated
   * (read in full before the new one).
   */
  @Test
  void aRotationWhileTheChainIsReadLosesOnlyTheSiblingThatIsGoneAndSaysSoOnce() throws Exception {
    Path log = dir.resolve("mail.log");
    LogFollower.Position at = followed(log);
    append(log, "end\n");
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, "r1\n");
    gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.2.gz"));
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, "r2\n");
    Files.move(dir.resolve("mail.log.2.gz"), dir.resolve("mail.log.3.gz"));
    Files.move(dir.resolve("mail.log.1"), dir.resolve("mail.log.2"));
    Files.move(log, dir.resolve("mail.log.1"));
    append(log, "r3\n");
    // mail.log.3.gz holds "end", mail.log.2 "r1" (plain), mail.log.1 "r2", mail.log "r3"
    Files.move(dir.resolve("mail.log.2"), dir.resolve("mail.log.2.tmp"));
    gzip(dir.resolve("mail.log.2.tmp"), dir.resolve("mail.log.2.gz"));
    try (LogFollower f = new LogFollower(log, at)) {
      LogFollower.Chunk first = f.poll();
      assertThat(first.lines()).containsExactly("end");
      // the next rotation: .3.gz deleted, .2.gz renamed to .3.gz, .1 compressed into .2.gz (a new file), the path's to .1
      Files.delete(dir.resolve("mail.log.3.gz"));
      Files.move(dir.resolve("mail.log.2.gz"), dir.resolve("mail.log.3.gz"));
      gzip(dir.resolve("mail.log.1"), dir.resolve("mail.log.2.gz"));
      Files.move(log, dir.resolve("mail.log.1"));
      append(log, "r4\n");
      List<String> all = new ArrayList<>();
      List<String> lost = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        LogFollower.Chunk c = f.poll();
        all.addAll(c.lines());
        if (c.lost() != null) {
          lost.add(c.lost());
        }
      }
      assertThat(all).as("r1 found renamed by its inode, r2 gone, r3 read after it though rotated, then r4")
          .containsExactly("r1", "r3", "r4");
      assertThat(lost).hasSize(1);
      assertThat(lost.get(0)).contains(dir.resolve("mail.log.1") + ", rotated from " + log, "is gone", "unknown to tracking");
    }
  }

  @Test
  void theOrderOfRotatedNamesIsByNumberOrDateAndAMixIsByModificationTimeThenName() {
    FileTime t1 = FileTime.from(Instant.parse("2026-12-01T00:00:00Z"));
    FileTime t2 = FileTime.from(Instant.parse("2026-12-02T00:00:00Z"));
    LogFollower.Sibling n1 = new LogFollower.Sibling(dir.resolve("m.log.1"), "k1", t1);
    LogFollower.Sibling n2 = new LogFollower.Sibling(dir.resolve("m.log.2.gz"), "k2", t2);
    LogFollower.Sibling n10 = new LogFollower.Sibling(dir.resolve("m.log.10.gz"), "k10", t2);
    assertThat(LogFollower.rotationOrder("m.log", List.of(n1, n2, n10))).containsExactly(n10, n2, n1);
    LogFollower.Sibling a = new LogFollower.Sibling(dir.resolve("m.log-20261203.gz"), "a", t1);
    LogFollower.Sibling b = new LogFollower.Sibling(dir.resolve("m.log-20261204"), "b", t1);
    LogFollower.Sibling c = new LogFollower.Sibling(dir.resolve("m.log-20261130.gz"), "c", t2);
    assertThat(LogFollower.rotationOrder("m.log", List.of(a, b, c))).containsExactly(c, a, b);
    LogFollower.Sibling old = new LogFollower.Sibling(dir.resolve("m.log.old"), "o", t1);
    assertThat(LogFollower.rotationOrder("m.log", List.of(n2, b, n1, old))).as("a mix: by time, then name")
        .containsExactly(b, n1, old, n2);
  }
}
