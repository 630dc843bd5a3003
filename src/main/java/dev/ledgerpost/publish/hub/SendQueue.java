package dev.ledgerpost.publish.hub;

import io.vertx.core.http.ServerWebSocket;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The bytes written to one subscriber's socket that the socket has not sent yet, counted by the hub itself.
 *
 * <p>Why not {@code ws.writeQueueFull()}: the hub writes from its own event loop, and a socket written from a
 * thread other than its own reports "full" after 16 queued <em>frames</em> (Vert.x 5's cross-thread outbound
 * queue), whatever their size. A burst of 17 small events would then cut every subscriber loose, and a
 * drain handler set from the hub's thread can miss a drain that already happened. Counting bytes from the
 * write until its completion is what {@code notify.sendQueueBytes} promises, from any thread.
 */
final class SendQueue {
  private final ServerWebSocket ws;
  private final long maxBytes;
  private final AtomicLong queued = new AtomicLong();
  /** Run once (on the caller's terms, see {@link #whenDrained}) when the queue is back at half its limit. */
  private final AtomicReference<Runnable> drained = new AtomicReference<>();

  SendQueue(ServerWebSocket ws, long maxBytes) {
    this.ws = ws;
    this.maxBytes = maxBytes;
  }

  /** Writes one text frame; its bytes count until the socket has sent them (or failed to). */
  void write(String text) {
    long bytes = utf8Length(text);
    queued.addAndGet(bytes);
    ws.writeTextMessage(text).onComplete(ar -> {
      if (queued.addAndGet(-bytes) <= maxBytes / 2) {
        Runnable r = drained.getAndSet(null);
        if (r != null) {
          r.run();
        }
      }
    });
  }

  /** More than {@code notify.sendQueueBytes} waits to be sent. */
  boolean full() {
    return queued.get() >= maxBytes;
  }

  /**
   * Runs {@code r} (from whichever thread completes a write, or from this one) once the queue is at half its
   * limit or less; the caller hops to its own context inside {@code r}.
   */
  void whenDrained(Runnable r) {
    drained.set(r);
    if (queued.get() <= maxBytes / 2 && drained.compareAndSet(r, null)) {
      r.run(); // drained before the waiter was in place
    }
  }

  long queuedBytes() {
    return queued.get();
  }

  /** The UTF-8 length of a string, without encoding it. */
  static long utf8Length(CharSequence s) {
    long n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }
}
