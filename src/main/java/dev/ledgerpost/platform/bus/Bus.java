package dev.ledgerpost.platform.bus;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.shareddata.LocalMap;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Typed request/reply over the local event bus. Parts exchange records, never loose JSON maps, and a
 * failure crosses the bus as the exception itself so the caller can still tell its cause by type. Each record
 * type gets its local codec ({@link LocalCodec}) the first time it crosses a Vert.x's bus, so no list of message
 * types has to be kept in step with the parts that send them.
 */
public final class Bus {
  /** Generous: the ledger bounds its own work (lock_timeout x attempts); this only catches a lost reply. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  /** The shared-data map, per Vert.x, of the types whose codec is registered on its event bus. */
  private static final String CODECS = "ledgerpost.bus.codecs";
  /**
   * The shared-data map, per Vert.x, of who serves what: "deployment id" TAB "address" for every {@link #serve}. The
   * parts' ownership of their addresses is checked against it (the ledger's context serves only the ledger's).
   */
  private static final String SERVED = "ledgerpost.bus.served";

  /** A failed request's cause, carried as a reply so its type survives the bus. */
  record Failure(Throwable cause) {}

  private final Vertx vertx;
  /**
   * The types this Bus already saw registered: a message of a known type crosses without a shared-data map look-up
   * (issue 33: a request or notice or two a message). The shared map still decides for a type new to this Bus.
   */
  private final Set<Class<?>> known = ConcurrentHashMap.newKeySet();
  /** The options of a request with the default timeout, shared: the event bus only reads them. */
  private static final DeliveryOptions DEFAULT_OPTIONS = new DeliveryOptions().setSendTimeout(DEFAULT_TIMEOUT.toMillis());

  private Bus(Vertx vertx) {
    this.vertx = vertx;
  }

  public static Bus of(Vertx vertx) {
    return new Bus(vertx);
  }

  /** The value itself, once its type has a codec on this Vert.x's bus (a type with one of Vert.x's own keeps that). */
  private <T> T local(T value) {
    if (value == null) {
      return null;
    }
    Class<?> type = value.getClass();
    if (known.contains(type)) {
      return value;
    }
    LocalMap<String, Boolean> registered = vertx.sharedData().getLocalMap(CODECS);
    if (registered.get(type.getName()) == null) {
      register(type);
      registered.put(type.getName(), Boolean.TRUE);
    }
    known.add(type);
    return value;
  }

  private <T> void register(Class<T> type) {
    try {
      vertx.eventBus().registerDefaultCodec(type, new LocalCodec<>(type));
    } catch (IllegalStateException | IllegalArgumentException alreadyOrBuiltIn) {
      // Registered by another Bus of this Vert.x meanwhile, or a type Vert.x has a codec for.
    }
  }

  public <Q, R> Future<R> request(String address, Q request, Class<R> replyType) {
    return request(address, request, replyType, DEFAULT_TIMEOUT);
  }

  public <Q, R> Future<R> request(String address, Q request, Class<R> replyType, Duration timeout) {
    DeliveryOptions options = timeout.equals(DEFAULT_TIMEOUT) ? DEFAULT_OPTIONS : new DeliveryOptions().setSendTimeout(timeout.toMillis());
    return vertx.eventBus().request(address, local(request), options).compose(message -> {
      Object body = message.body();
      if (body instanceof Failure failure) {
        return Future.failedFuture(failure.cause());
      }
      return Future.succeededFuture(replyType.cast(body));
    });
  }

  /** Publishes a one-way notice; nobody listening is not an error. */
  public void publish(String address, Object notice) {
    vertx.eventBus().publish(address, local(notice));
  }

  /**
   * Serves requests of one type at an address; a failed future is sent back as its exception. The handler runs on the
   * caller's context (a part serves from its verticle's start), which is recorded as the address's owner ({@link #served}).
   */
  public <Q, R> MessageConsumer<Q> serve(String address, Class<Q> requestType, Function<Q, Future<R>> handler) {
    Context context = Vertx.currentContext();
    String deployment = context == null || context.deploymentID() == null ? "" : context.deploymentID();
    vertx.sharedData().<String, Boolean>getLocalMap(SERVED).put(deployment + '\t' + address, Boolean.TRUE);
    return vertx.eventBus().<Q>localConsumer(address, message -> Hop.guarded(() -> handler.apply(requestType.cast(message.body())))
        .onComplete(ar -> message.reply(local(ar.succeeded() ? ar.result() : new Failure(ar.cause())))));
  }

  /**
   * The addresses served through {@link #serve} by each deployment still deployed on {@code vertx} (its id; "" for a
   * serve outside any verticle), sorted. Read at start or by tests: it copies the whole map.
   */
  public static Map<String, Set<String>> served(Vertx vertx) {
    Set<String> live = vertx.deploymentIDs();
    Map<String, Set<String>> byDeployment = new TreeMap<>();
    for (String entry : vertx.sharedData().<String, Boolean>getLocalMap(SERVED).keySet()) {
      int tab = entry.indexOf('\t');
      String deployment = entry.substring(0, tab);
      if (deployment.isEmpty() || live.contains(deployment)) {
        byDeployment.computeIfAbsent(deployment, d -> new TreeSet<>()).add(entry.substring(tab + 1));
      }
    }
    return byDeployment;
  }
}
