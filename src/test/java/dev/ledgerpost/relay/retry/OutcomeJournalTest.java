package dev.ledgerpost.relay.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarness;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The journal on a real file: group commit, done-marks, compaction, recovery, and a disk that fails. */
class OutcomeJournalTest {
  Vertx vertx;
  Context context;
  Path dir;
  final AtomicReference<FailingChannel.Fault> fault = new AtomicReference<>(FailingChannel.Fault.NONE);
  final OutcomeJournal.Opener failing = file -> new FailingChannel(OutcomeJournal.Opener.APPEND.open(file), fault);

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
    context = vertx.getOrCreateContext();
    dir = GatewayHarness.tempDir("journal-unit-");
  }

  @AfterEach
  void stop() throws Exception {
    GatewayHarness.await(vertx.close());
  }

  /** Journal calls belong on one event loop, like in the retry verticle. */
  <T> T on(Supplier<Future<T>> call) throws Exception {
    CompletableFuture<T> result = new CompletableFuture<>();
    context.runOnContext(v -> call.get().onComplete(ar -> {
      if (ar.succeeded()) {
        result.complete(ar.result());
      } else {
        result.completeExceptionally(ar.cause());
      }
    }));
    try {
      return result.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  OutcomeJournal open(long compactBytes, OutcomeJournal.Opener opener) throws Exception {
    OutcomeJournal j = on(() -> Future.succeededFuture(new OutcomeJournal(vertx, dir, compactBytes, opener)));
    on(j::recover);
    return j;
  }

  @Test
  void concurrentAppendsShareFsyncsAndEachIsAcknowledgedOnlyOnceWritten() throws Exception {
    OutcomeJournal j = open(1 << 20, OutcomeJournal.Opener.APPEND);
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      ids.add(UUID.randomUUID());
    }
    on(() -> Future.all(ids.stream().map(id -> j.append(JournalFormatTest.outcome(id))).toList()).mapEmpty());

    OutcomeJournal.Stats s = j.stats();
    System.out.printf("group commit: %d appends in one burst, %d fsyncs%n", s.appends(), s.syncs());
    assertThat(s.appends()).isEqualTo(300);
    assertThat(s.syncs()).as("group commit: fsyncs for 300 appends").isBetween(1L, 10L);
    assertThat(s.open()).isEqualTo(300);
    // Everything acknowledged is in the file, readable, in order.
    JournalFormat.Scan scan = JournalFormat.scan(Files.readAllBytes(j.file()));
    assertThat(scan.damages()).isEmpty();
    assertThat(scan.entries()).extracting(JournalFormat.Entry::id).containsExactlyElementsOf(ids);
  }

  @Test
  void doneMarksEmptyAnIdleJournalAndABigOneIsRewrittenWithItsOpenOutcomesOnly() throws Exception {
    OutcomeJournal j = open(2048, OutcomeJournal.Opener.APPEND);
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id);
      on(() -> j.append(JournalFormatTest.outcome(id)));
    }
    List<UUID> keep = ids.subList(35, 40);
    on(() -> {
      ids.subList(0, 35).forEach(j::markDone);
      return j.append(JournalFormatTest.outcome(UUID.randomUUID())).map(v -> null); // waits for the writes before it
    });
    assertThat(j.stats().compactions()).isGreaterThanOrEqualTo(1);
    JournalFormat.Scan scan = JournalFormat.scan(Files.readAllBytes(j.file()));
    assertThat(scan.entries()).allMatch(e -> e instanceof JournalFormat.Outcome);
    assertThat(scan.entries()).extracting(JournalFormat.Entry::id).containsAll(keep).hasSize(6);

    on(() -> {
      scan.entries().forEach(e -> j.markDone(e.id()));
      return j.close();
    });
    assertThat(Files.size(j.file())).as("nothing open: the journal is emptied").isZero();
  }

  @Test
  void aRestartReplaysExactlyTheOutcomesWithoutDoneMarks() throws Exception {
    OutcomeJournal j = open(1 << 20, OutcomeJournal.Opener.APPEND);
    UUID a = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    UUID c = UUID.randomUUID();
    on(() -> j.append(JournalFormatTest.outcome(a)));
    on(() -> j.append(JournalFormatTest.outcome(b)));
    on(() -> j.append(JournalFormatTest.outcome(c)));
    on(() -> {
      j.markDone(b);
      return j.close();
    });

    OutcomeJournal again = on(() -> Future.succeededFuture(new OutcomeJournal(vertx, dir, 1 << 20, OutcomeJournal.Opener.APPEND)));
    OutcomeJournal.Recovery r = on(again::recover);
    assertThat(r.open()).containsExactly(JournalFormatTest.outcome(a), JournalFormatTest.outcome(c));
    assertThat(r.damages()).isEmpty();
    assertThat(JournalFormat.scan(Files.readAllBytes(again.file())).entries()).hasSize(2); // compacted at start
  }

  /**
   * Issue 26, item 12: the journal holds addresses (envelopes, replies), so the directories it makes are 0700 and
   * every file it writes is 0600 from its creation: the journal, its start-up rewrite, and the copy of a damaged
   * one. A journal an older version left 0644 is 0600 after the next start (the start rewrites it).
   */
  @Test
  void theJournalItsRewriteAndACorruptCopyAreOwnerOnly() throws Exception {
    java.util.Set<java.nio.file.attribute.PosixFilePermission> file =
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------");
    java.util.Set<java.nio.file.attribute.PosixFilePermission> directory =
        java.nio.file.attribute.PosixFilePermissions.fromString("rwx------");
    Path root = dir;
    dir = root.resolve("data").resolve("journal");
    OutcomeJournal j = open(1 << 20, OutcomeJournal.Opener.APPEND);
    on(() -> j.append(JournalFormatTest.outcome(UUID.randomUUID())));
    assertThat(Files.getPosixFilePermissions(j.file())).as("the journal").isEqualTo(file);
    assertThat(Files.getPosixFilePermissions(dir)).as("its directory").isEqualTo(directory);
    assertThat(Files.getPosixFilePermissions(dir.getParent())).as("the data directory it made").isEqualTo(directory);
    on(j::close);

    // An older version's 0644 journal, with a damaged record between two good ones: rewritten 0600, copied 0600.
    Files.write(j.file(), JournalFormatTest.concat(JournalFormat.outcome(JournalFormatTest.outcome(UUID.randomUUID()), 1),
        "damaged record".getBytes(java.nio.charset.StandardCharsets.US_ASCII),
        JournalFormat.outcome(JournalFormatTest.outcome(UUID.randomUUID()), 2)));
    Files.setPosixFilePermissions(j.file(), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
    OutcomeJournal again = open(1 << 20, OutcomeJournal.Opener.APPEND);
    assertThat(Files.getPosixFilePermissions(again.file())).as("the journal rewritten at start").isEqualTo(file);
    try (var files = Files.list(dir)) {
      List<Path> copies = files.filter(p -> p.getFileName().toString().startsWith(OutcomeJournal.FILE + ".corrupt-")).toList();
      assertThat(copies).hasSize(1);
      assertThat(Files.getPosixFilePermissions(copies.get(0))).as("the damaged journal's copy").isEqualTo(file);
    }
    on(again::close);
  }

  @Test
  void whenTheStartUpRewriteFailsTheJournalIsKeptAsItIsWithoutItsTornTail() throws Exception {
    UUID a = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    byte[] torn = JournalFormat.outcome(JournalFormatTest.outcome(UUID.randomUUID()), 3);
    Files.write(dir.resolve(OutcomeJournal.FILE), JournalFormatTest.concat(JournalFormat.outcome(JournalFormatTest.outcome(a), 1),
        JournalFormat.outcome(JournalFormatTest.outcome(b), 2), java.util.Arrays.copyOf(torn, 30)));
    // The temporary file's name is taken by a directory that cannot be removed: the rewrite fails for real.
    Files.createDirectories(dir.resolve(OutcomeJournal.FILE + ".tmp")).resolve("x").toFile().createNewFile();

    OutcomeJournal j = on(() -> Future.succeededFuture(new OutcomeJournal(vertx, dir, 1 << 20, OutcomeJournal.Opener.APPEND)));
    OutcomeJournal.Recovery r = on(j::recover);

    assertThat(r.open()).containsExactly(JournalFormatTest.outcome(a), JournalFormatTest.outcome(b));
    UUID c = UUID.randomUUID();
    on(() -> j.append(JournalFormatTest.outcome(c)));
    JournalFormat.Scan scan = JournalFormat.scan(Files.readAllBytes(j.file()));
    assertThat(scan.damages()).as("the torn tail was cut off before appending").isEmpty();
    assertThat(scan.entries()).extracting(JournalFormat.Entry::id).containsExactly(a, b, c);
  }

  @Test
  void aFullDiskFailsTheAppendLeavesNoHalfRecordAndTheJournalGoesOnWhenSpaceIsBack() throws Exception {
    OutcomeJournal j = open(1 << 20, failing);
    UUID before = UUID.randomUUID();
    UUID lost = UUID.randomUUID();
    UUID after = UUID.randomUUID();
    on(() -> j.append(JournalFormatTest.outcome(before)));

    fault.set(FailingChannel.Fault.DISK_FULL);
    assertThatThrownBy(() -> on(() -> j.append(JournalFormatTest.outcome(lost))))
        .hasMessageContaining("No space left on device");
    fault.set(FailingChannel.Fault.NONE);
    on(() -> j.append(JournalFormatTest.outcome(after)));

    JournalFormat.Scan scan = JournalFormat.scan(Files.readAllBytes(j.file()));
    assertThat(scan.damages()).as("the half-written record was cut off").isEmpty();
    assertThat(scan.entries()).extracting(JournalFormat.Entry::id).containsExactly(before, after);
    assertThat(j.stats().writeFailures()).isEqualTo(1);
  }

  @Test
  void aFailedFsyncIsNeverAcknowledged() throws Exception {
    OutcomeJournal j = open(1 << 20, failing);
    fault.set(FailingChannel.Fault.FSYNC_FAILS);
    assertThatThrownBy(() -> on(() -> j.append(JournalFormatTest.outcome(UUID.randomUUID()))))
        .hasMessageContaining("Input/output error");
    assertThat(j.stats().open()).isZero();
    fault.set(FailingChannel.Fault.NONE);
    UUID ok = UUID.randomUUID();
    on(() -> j.append(JournalFormatTest.outcome(ok)));
    assertThat(JournalFormat.scan(Files.readAllBytes(j.file())).entries()).extracting(JournalFormat.Entry::id)
        .containsExactly(ok);
  }
}
