package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The follower's file handling: new lines, a line being written, rotation by rename and by copytruncate, a restart. */
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
}
