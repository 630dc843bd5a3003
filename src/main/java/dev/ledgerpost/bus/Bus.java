package dev.ledgerpost.bus;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageConsumer;
import java.time.Duration;
import java.util.function.Function;

/**
 * Typed request/reply over the local event bus. Parts exchange records, never loose JSON maps, and a
 * failure crosses the bus as the exception itself so the caller can still tell its cause by type.
 */
public final class Bus {
  /** Generous: the ledger bounds its own work (lock_timeout x attempts); this only catches a lost reply. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

  /** A failed request's cause, carried as a reply so its type survives the bus. */
  record Failure(Throwable cause) {}

  private final Vertx vertx;

  private Bus(Vertx vertx) {
    this.vertx = vertx;
  }

  /** Registers local codecs for the given message types on this Vert.x instance, once. */
  public static synchronized Bus install(Vertx vertx, Class<?>... messageTypes) {
    EventBus eb = vertx.eventBus();
    register(eb, Failure.class);
    for (Class<?> type : messageTypes) {
      register(eb, type);
    }
    return new Bus(vertx);
  }

  /** A handle on a Vert.x whose codecs were already installed. */
  public static Bus of(Vertx vertx) {
    return new Bus(vertx);
  }

  private static <T> void register(EventBus eb, Class<T> type) {
    try {
      eb.registerDefaultCodec(type, new LocalCodec<>(type));
    } catch (IllegalStateException alreadyRegistered) {
      // Several gateways in one Vert.x (tests) share the codecs.
    }
  }

  public <Q, R> Future<R> request(String address, Q request, Class<R> replyType) {
    return request(address, request, replyType, DEFAULT_TIMEOUT);
  }

  /**
   * A request that cannot be sent fails its future, as one nobody answers does: a part that asks another before that
   * one has started (and registered its message types) hears a failure, never an exception on its own stack.
   */
  public <Q, R> Future<R> request(String address, Q request, Class<R> replyType, Duration timeout) {
    DeliveryOptions options = new DeliveryOptions().setSendTimeout(timeout.toMillis());
    Future<io.vertx.core.eventbus.Message<Object>> sent;
    try {
      sent = vertx.eventBus().request(address, request, options);
    } catch (IllegalArgumentException noCodecYet) {
      return Future.failedFuture(noCodecYet);
    }
    return sent.compose(message -> {
      Object body = message.body();
      if (body instanceof Failure failure) {
        return Future.failedFuture(failure.cause());
      }
      return Future.succeededFuture(replyType.cast(body));
    });
  }

  /** Publishes a one-way notice; nobody listening is not an error. */
  public void publish(String address, Object notice) {
    vertx.eventBus().publish(address, notice);
  }

  /** Serves requests of one type at an address; a failed future is sent back as its exception. */
  public <Q, R> MessageConsumer<Q> serve(String address, Class<Q> requestType, Function<Q, Future<R>> handler) {
    return vertx.eventBus().<Q>localConsumer(address, message -> {
      Future<R> result;
      try {
        result = handler.apply(requestType.cast(message.body()));
      } catch (RuntimeException e) {
        result = Future.failedFuture(e);
      }
      result.onComplete(ar -> message.reply(ar.succeeded() ? ar.result() : new Failure(ar.cause())));
    });
  }
}
