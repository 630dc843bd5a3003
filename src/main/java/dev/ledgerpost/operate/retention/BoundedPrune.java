package dev.ledgerpost.operate.retention;

import io.vertx.core.Future;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One retention pass: deletes in batches of {@link #batch} rows, one transaction each (no transaction grows
 * large, no lock is held long), until a batch comes back short or {@link #maxBatches} ran. Never overlaps itself.
 */
final class BoundedPrune {
  private static final Logger LOG = LoggerFactory.getLogger(BoundedPrune.class);

  private final String what;
  private final int batch;
  private final int maxBatches;
  /** Deletes at most its argument rows; answers how many it deleted. */
  private final IntFunction<Future<Integer>> deleteBatch;
  private boolean running;

  BoundedPrune(String what, int batch, int maxBatches, IntFunction<Future<Integer>> deleteBatch) {
    this.what = what;
    this.batch = batch;
    this.maxBatches = maxBatches;
    this.deleteBatch = deleteBatch;
  }

  /** Runs one pass unless one is running; answers the rows it deleted. */
  Future<Long> run() {
    if (running) {
      return Future.succeededFuture(0L);
    }
    running = true;
    return next(0, 0).onComplete(ar -> running = false);
  }

  private Future<Long> next(int batches, long deleted) {
    return deleteBatch.apply(batch).transform(ar -> {
      if (ar.failed()) {
        LOG.warn("{} retention pass failed after {} row(s): {}; the next pass tries again", what, deleted, ar.cause().getMessage());
        return Future.succeededFuture(deleted);
      }
      long total = deleted + ar.result();
      if (ar.result() == batch && batches + 1 < maxBatches) {
        return next(batches + 1, total);
      }
      if (total > 0) {
        LOG.info("{} retention deleted {} row(s)", what, total);
      }
      return Future.succeededFuture(total);
    });
  }
}
