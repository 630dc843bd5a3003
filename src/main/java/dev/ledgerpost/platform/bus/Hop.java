package dev.ledgerpost.platform.bus;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.function.Supplier;

/**
 * A direct call into a part that keeps its state on its own context, without the event bus's per-request
 * reply registration and timeout timer: the work runs on the part's context, and its answer comes back on
 * the caller's. For the hot path (one call per message); the bus stays for everything else.
 */
public final class Hop {
  private Hop() {}

  /** Runs {@code work} on {@code target}; the future completes on the calling context (or at once off Vert.x). */
  public static <T> Future<T> call(Context target, Supplier<Future<T>> work) {
    Context caller = Vertx.currentContext();
    if (caller == target) {
      return work.get();
    }
    Promise<T> answer = Promise.promise();
    target.runOnContext(v -> guarded(work).onComplete(ar -> {
      if (caller == null) {
        answer.handle(ar);
      } else {
        caller.runOnContext(x -> answer.handle(ar));
      }
    }));
    return answer.future();
  }

  /** {@code work}'s future; an exception it throws instead becomes a failed future, so a caller has one path for both. */
  public static <T> Future<T> guarded(Supplier<Future<T>> work) {
    try {
      return work.get();
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }

  /** Completes {@code promise} on {@code caller}'s context (at once when that is this one, or when there is none). */
  public static <T> void complete(Context caller, Promise<T> promise, T value, Throwable failure) {
    Runnable done = () -> {
      if (failure == null) {
        promise.tryComplete(value);
      } else {
        promise.tryFail(failure);
      }
    };
    if (caller == null || caller == Vertx.currentContext()) {
      done.run();
    } else {
      caller.runOnContext(v -> done.run());
    }
  }

  /** Runs {@code work} on {@code target}, answering nobody. */
  public static void send(Context target, Runnable work) {
    if (Vertx.currentContext() == target) {
      work.run();
    } else {
      target.runOnContext(v -> work.run());
    }
  }
}
