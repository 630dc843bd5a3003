package dev.ledgerpost.relay.retry;

import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.bus.Hop;
import dev.ledgerpost.platform.config.PrivateFiles;
import dev.ledgerpost.platform.lockfile.LockFile;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The append-only outcome journal ({@link JournalFormat}): a known outcome is on disk, fsynced,
 * before its settle is first attempted, so a crash between the downstream's verdict and the ledger's
 * commit loses nothing: the next start replays every outcome that has no done-mark.
 *
 * <p>Threading: every method may be called from any thread (the relay contract journals from every
 * SMTP and HTTP event loop, the retry part from its own); the bookkeeping is guarded by this object's
 * lock, and a caller's future completes on the caller's context. File work runs on one ordered worker
 * thread of its own (never on an event loop, and never on the shared worker pool, which an fsync could
 * stall). Appends that arrive while a write is under way are written and fsynced together afterwards:
 * one fsync per batch (group commit), and no append is acknowledged before the fsync that covers it.
 *
 * <p>An append whose settle committed before its turn came is not written at all ({@link #settled}):
 * the ledger holds the fact, the journal would only have to mark it done again. Under load, when settles
 * commit while the previous batch is being fsynced, this keeps most outcomes off the disk.
 *
 * <p>The directory belongs to one process ({@link LockFile}, {@code ledgerpost.lock} in it): recovery takes
 * the lock before it reads the file, and a second gateway on the directory is refused at start.
 */
final class OutcomeJournal {
  private static final Logger LOG = LoggerFactory.getLogger(OutcomeJournal.class);
  static final String FILE = "outcomes.log";

  /** Opens the journal for appending; tests substitute one that fails like a full disk. */
  interface Opener {
    FileChannel open(Path file) throws IOException;

    /** Owner-only from its first byte: the journal holds envelopes and replies, addresses among them. */
    Opener APPEND = file -> PrivateFiles.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
  }

  /** Counters for tests and, later, metrics. {@code open} is outcomes on disk without a done-mark. */
  record Stats(long appends, long syncs, long compactions, long writeFailures, long open, long bytes) {}

  /** What start-up found: the outcomes to replay, in journal order, and the damage it skipped. */
  record Recovery(List<JournalFormat.Outcome> outcomes, int records, List<JournalFormat.Damage> damages, long bytesBefore,
      long bytesAfter) {
    List<KnownOutcome> open() {
      return outcomes.stream().map(JournalFormat.Outcome::outcome).toList();
    }
  }

  /** One record to write; for an outcome, who waits for it and on which context the answer goes back. */
  private record Pending(UUID id, byte[] bytes, Promise<Boolean> synced, Context caller) {
    boolean isOutcome() {
      return synced != null;
    }

    /** True: written and fsynced; false: not needed (its settle committed first); a failure: not journaled. */
    void answer(Boolean written, Throwable failure) {
      Hop.complete(caller, synced, written, failure);
    }
  }

  private final Vertx vertx;
  private final Path dir;
  private final Path file;
  private final Path tmp;
  private final long compactBytes;
  private final WorkerExecutor io;

  /** Touched only by the io thread. */
  private final JournalFile journalFile;
  /** The directory's lock (io thread): one process, one journal; taken before the file is read, released at close. */
  private LockFile lock;

  /** Guarded by this: outcomes on disk without a done-mark, in file order, with their record bytes. */
  private final Map<UUID, byte[]> open = new LinkedHashMap<>();
  private long fileBytes;
  private long liveBytes;
  private List<Pending> pending = new ArrayList<>();
  private boolean busy;
  private boolean compactionFailed;
  /** After a failed compaction, the next one waits until the file has grown by another compactBytes. */
  private long compactionRetryAt;
  private Promise<Void> closing;
  private boolean closed;
  private volatile long openCount;
  private volatile long bytesNow;
  /** Outcomes whose settle committed while their append was being written: marked done once it is. */
  private final java.util.Set<UUID> settledInFlight = new java.util.HashSet<>();
  private final AtomicLong superseded = new AtomicLong();

  private final AtomicLong appends = new AtomicLong();
  private final AtomicLong syncs = new AtomicLong();
  private final AtomicLong compactions = new AtomicLong();
  private final AtomicLong writeFailures = new AtomicLong();

  OutcomeJournal(Vertx vertx, Path dir, long compactBytes, Opener opener) {
    this.vertx = vertx;
    this.dir = dir;
    this.file = dir.resolve(FILE);
    this.tmp = dir.resolve(FILE + ".tmp");
    this.compactBytes = compactBytes;
    this.journalFile = new JournalFile(dir, file, tmp, opener);
    this.io = vertx.createSharedWorkerExecutor("ledgerpost-journal-" + System.identityHashCode(this), 1, 5, TimeUnit.MINUTES);
  }

  Path file() {
    return file;
  }

  /**
   * Reads the journal, reports damage, rewrites it with only the open outcomes and returns those for
   * replay. Damage is never fatal: a torn last record is a crash during its write (it was never
   * acknowledged), a damaged record in the middle is reported as CRITICAL and the file kept aside.
   */
  Future<Recovery> recover() {
    return io.executeBlocking(this::recoverBlocking, true).map(r -> {
      synchronized (this) {
        for (JournalFormat.Outcome o : r.outcomes()) {
          open.put(o.id(), o.raw());
        }
        fileBytes = r.bytesAfter();
        liveBytes = r.bytesAfter();
        publishStats();
      }
      return r;
    });
  }

  /**
   * The directory's lock comes first: a second process on it is refused before it reads, compacts or
   * replays anything (two processes replaying and compacting one file would lose and repeat outcomes).
   */
  private Recovery recoverBlocking() throws IOException {
    lock = LockFile.acquire("retry.journalDir", dir, dir.resolve(LockFile.NAME));
    try {
      return recoverLocked();
    } catch (IOException | RuntimeException e) {
      lock.close(); // the start fails and nobody will close this journal: let a later start in this JVM have it
      lock = null;
      throw e;
    }
  }

  private Recovery recoverLocked() throws IOException {
    try {
      if (Files.deleteIfExists(tmp)) {
        LOG.info("outcome journal: removed {} left by a compaction that did not finish (the journal itself is intact)", tmp);
      }
    } catch (IOException e) {
      LOG.warn("outcome journal: cannot remove {}: {}", tmp, e.toString());
    }
    // A journal that cannot be read fails the start: compacting it blind would destroy the facts in it.
    byte[] data = Files.exists(file) ? Files.readAllBytes(file) : new byte[0];
    JournalFormat.Scan scan = JournalFormat.scan(data);
    Map<UUID, JournalFormat.Outcome> outcomes = new LinkedHashMap<>();
    for (JournalFormat.Entry e : scan.entries()) {
      e.accept(new JournalFormat.Entry.Visitor<Void>() {
        @Override
        public Void outcome(JournalFormat.Outcome o) {
          outcomes.putIfAbsent(o.id(), o);
          return null;
        }

        @Override
        public Void done(JournalFormat.Done d) {
          outcomes.remove(d.id());
          return null;
        }
      });
    }
    Path copy = null;
    for (JournalFormat.Damage d : scan.damages()) {
      if (d.tail()) {
        LOG.warn("outcome journal {}: torn last record at offset {} ({} bytes) skipped; a crash interrupted its write, "
            + "so it was never acknowledged as journaled", file, d.offset(), d.length());
      } else {
        if (copy == null) {
          copy = dir.resolve(FILE + ".corrupt-" + System.currentTimeMillis());
          PrivateFiles.writeNew(copy, data);
        }
        AuditLog.of(AuditEvent.OUTCOME_JOURNAL_CORRUPT).with("file", file).with("offset", d.offset())
            .with("bytes", d.length()).with("copy", copy).log();
      }
    }
    List<byte[]> keep = new ArrayList<>();
    List<JournalFormat.Outcome> replay = new ArrayList<>(outcomes.values());
    for (JournalFormat.Outcome o : replay) {
      keep.add(o.raw());
    }
    long after;
    try {
      after = journalFile.rewrite(keep);
    } catch (IOException e) {
      after = keepAsItIs(scan, e);
    }
    if (data.length > 0 || !replay.isEmpty()) {
      LOG.info("outcome journal {}: {} records read, {} outcomes open for replay, compacted from {} to {} bytes",
          file, scan.entries().size(), replay.size(), data.length, after);
    }
    return new Recovery(List.copyOf(replay), scan.entries().size(), scan.damages(), data.length, after);
  }

  /**
   * The start-up rewrite failed (a full disk, say): rather than refuse to start, keep the file as it is,
   * cut off only a torn tail (which frees space, needs none) so that appends do not follow half a record.
   */
  private long keepAsItIs(JournalFormat.Scan scan, IOException cause) throws IOException {
    LOG.error("outcome journal {}: compaction at start failed ({}); appending to the journal as it is", file, cause.toString());
    List<JournalFormat.Damage> damages = scan.damages();
    boolean torn = !damages.isEmpty() && damages.get(damages.size() - 1).tail();
    return journalFile.keepAsItIs(torn ? damages.get(damages.size() - 1).offset() : -1);
  }

  /**
   * Appends an outcome. The future completes with true after the fsync that makes it durable, with false
   * when its settle committed first and it was never written ({@link #settled}), and fails if the write
   * fails. It completes on the caller's context.
   */
  Future<Boolean> append(KnownOutcome outcome) {
    Promise<Boolean> synced = Promise.promise();
    Pending p = new Pending(outcome.settle().id(), JournalFormat.outcome(outcome, System.currentTimeMillis()), synced,
        Vertx.currentContext());
    synchronized (this) {
      if (closing != null) {
        return Future.failedFuture(new IOException("outcome journal is closed"));
      }
      pending.add(p);
      appends.incrementAndGet();
    }
    kick();
    return synced.future();
  }

  /**
   * The outcome's settle committed. An append still waiting for its turn is dropped (its future answers
   * false at once); one being written is marked done once it is; one on disk is marked done now.
   */
  void settled(UUID id) {
    Pending dropped = null;
    synchronized (this) {
      for (java.util.Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
        Pending p = it.next();
        if (p.isOutcome() && p.id().equals(id)) {
          it.remove();
          dropped = p;
          break;
        }
      }
      if (dropped == null) {
        if (open.containsKey(id)) {
          markDoneLocked(id);
        } else if (busy) {
          settledInFlight.add(id);
        }
      }
    }
    if (dropped != null) {
      superseded.incrementAndGet();
      dropped.answer(false, null);
    } else {
      kick();
    }
  }

  /**
   * Marks an outcome done. Not fsynced, and no caller waits for it: if a crash loses a done-mark, the
   * next start replays that outcome, and the ledger answers an identical settle as already settled
   * (or STALE, when a newer fact exists). A lost done-mark costs one redundant idempotent settle,
   * never a fact, so paying an fsync for it would buy nothing.
   */
  void markDone(UUID id) {
    synchronized (this) {
      markDoneLocked(id);
    }
    kick();
  }

  private void markDoneLocked(UUID id) {
    byte[] raw = open.remove(id);
    if (raw == null || closed) {
      return;
    }
    liveBytes -= raw.length;
    publishStats();
    pending.add(new Pending(id, JournalFormat.done(id), null, null));
  }

  synchronized boolean isOpen(UUID id) {
    return open.containsKey(id);
  }

  /** Writes what is pending, closes the file, releases the io thread. */
  Future<Void> close() {
    Future<Void> f;
    synchronized (this) {
      if (closing == null) {
        closing = Promise.promise();
      }
      f = closing.future();
    }
    kick();
    return f;
  }

  Stats stats() {
    return new Stats(appends.get(), syncs.get(), compactions.get(), writeFailures.get(), openCount, bytesNow);
  }

  /** Appends that were never written because their settle committed first. */
  long superseded() {
    return superseded.get();
  }

  /** Starts the next piece of file work if none is under way: a compaction, a batch of records, or the close. */
  private void kick() {
    List<Pending> batch;
    long before;
    boolean sync;
    synchronized (this) {
      if (busy || closed) {
        return;
      }
      if (compactionDue()) {
        compact();
        return;
      }
      if (pending.isEmpty()) {
        if (closing != null) {
          finishClose();
        }
        return;
      }
      batch = pending;
      pending = new ArrayList<>();
      busy = true;
      before = fileBytes;
      sync = batch.stream().anyMatch(Pending::isOutcome);
    }
    List<byte[]> records = batch.stream().map(Pending::bytes).toList();
    io.executeBlocking(() -> journalFile.append(before, records, sync), true).onComplete(ar -> written(batch, sync, ar));
  }

  private void written(List<Pending> batch, boolean sync, io.vertx.core.AsyncResult<Long> ar) {
    synchronized (this) {
      busy = false;
      if (ar.succeeded()) {
        fileBytes = ar.result();
        compactionFailed = false;
        if (sync) {
          syncs.incrementAndGet();
        }
        for (Pending p : batch) {
          if (p.isOutcome()) {
            open.put(p.id(), p.bytes());
            liveBytes += p.bytes().length;
            if (settledInFlight.remove(p.id())) {
              markDoneLocked(p.id()); // its settle committed while this write was under way
            }
          }
        }
        publishStats();
      } else {
        writeFailures.incrementAndGet();
        batch.forEach(p -> settledInFlight.remove(p.id()));
        LOG.error("outcome journal {}: writing {} records failed: {}", file, batch.size(), ar.cause().toString());
      }
    }
    for (Pending p : batch) {
      if (p.isOutcome()) {
        p.answer(ar.succeeded() ? Boolean.TRUE : null, ar.succeeded() ? null : ar.cause());
      }
    }
    kick();
  }

  /**
   * Rewrite when the file is at least the configured size and at least twice what is still open, or
   * empty it when nothing is open. The second rule keeps an idle journal at zero bytes.
   */
  private boolean compactionDue() {
    if (compactionFailed || (fileBytes >= 0 && fileBytes < compactionRetryAt)) {
      return false;
    }
    if (open.isEmpty()) {
      return fileBytes != 0;
    }
    return fileBytes < 0 || (fileBytes >= compactBytes && fileBytes >= 2 * liveBytes);
  }

  /** Under the lock: rewrites the file with the open outcomes only. */
  private void compact() {
    busy = true;
    List<byte[]> snapshot = new ArrayList<>(open.values());
    // Done-marks still pending belong to outcomes no longer open, which the rewrite leaves out anyway.
    pending.removeIf(p -> !p.isOutcome());
    io.executeBlocking(() -> snapshot.isEmpty() ? journalFile.truncate() : journalFile.rewrite(snapshot), true).onComplete(ar -> {
      synchronized (this) {
        busy = false;
        if (ar.succeeded()) {
          fileBytes = ar.result();
          compactionRetryAt = 0;
          compactions.incrementAndGet();
        } else {
          // The old file or the new one is in place, either is complete; the next write takes the real size.
          LOG.error("outcome journal {}: compaction failed: {}", file, ar.cause().toString());
          compactionFailed = true;
          compactionRetryAt = Math.max(fileBytes, 0) + compactBytes;
          fileBytes = -1;
        }
        publishStats();
      }
      kick();
    });
  }

  private void finishClose() {
    closed = true;
    io.executeBlocking(() -> {
      try {
        journalFile.close();
      } finally {
        if (lock != null) {
          lock.close();
          lock = null;
        }
      }
      return null;
    }, true).onComplete(ar -> {
      io.close();
      if (ar.failed()) {
        LOG.warn("outcome journal {}: close failed: {}", file, ar.cause().toString());
      }
      closing.complete();
    });
  }

  private void publishStats() {
    openCount = open.size();
    bytesNow = fileBytes;
  }
}
