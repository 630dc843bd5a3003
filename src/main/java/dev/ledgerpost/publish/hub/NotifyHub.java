package dev.ledgerpost.publish.hub;

import dev.ledgerpost.platform.auth.EventTokens;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.bus.Hop;
import io.vertx.core.Context;
import dev.ledgerpost.publish.outbox.OutboxEvent;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.http.HttpServerRequest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The WebSocket hub at {@code GET /api/v1/events}. Live events are every node's, read by the {@link EventFeed}; a client
 * that connects with {@code since} is first replayed the PostgreSQL history. The hub only ever reads
 * facts: nothing a subscriber does (or fails to do) reaches SMTP intake or the ledger's writes.
 *
 * <p>Close codes: 4400 bad request, 4401 not authenticated, 4008 too slow (resume with {@code since}).
 */
public final class NotifyHub {
  private static final Logger LOG = LoggerFactory.getLogger(NotifyHub.class);
  static final short CLOSE_BAD_REQUEST = 4400;
  static final short CLOSE_UNAUTHORIZED = 4401;
  static final short CLOSE_TOO_SLOW = 4008;
  private static final int ATTEMPTS_TRACKED = 10_000;

  private final Vertx vertx;
  private final Bus bus;
  private final EventTokens tokens;
  private final long sendQueueBytes;
  private final Set<Subscriber> subscribers = ConcurrentHashMap.newKeySet();
  /** Frames sent per message since this process started (a view, not a fact: not persisted). */
  private final Map<UUID, Integer> attempts = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<UUID, Integer> eldest) {
      return size() > ATTEMPTS_TRACKED;
    }
  };

  public NotifyHub(Vertx vertx, EventTokens tokens, long sendQueueBytes) {
    this.vertx = vertx;
    this.bus = Bus.of(vertx);
    this.tokens = tokens;
    this.sendQueueBytes = sendQueueBytes;
  }

  /** Every published event of every node, in order; on the hub's context. */
  private EventFeed feed;

  /** On the hub's context: every event up to this one was offered to every subscriber registered at the time. */
  long lastOffered() {
    return feed.cursor();
  }

  /** The hub's own context (its verticle's): every subscriber lives there. */
  private volatile Context context;

  /** Starts the feed of published events on the hub verticle's context, where every subscriber then lives. */
  Future<Void> start(Context hubContext, Duration poll) {
    this.context = hubContext;
    feed = new EventFeed(vertx, () -> !subscribers.isEmpty(), this::offer, through -> {
      for (Subscriber s : subscribers) {
        s.tooSlow(); // they resume with since= and are told to reset
      }
    });
    return feed.start(poll);
  }

  private void offer(OutboxEvent e) {
    for (Subscriber s : subscribers) {
      try {
        s.offer(e);
      } catch (RuntimeException failure) {
        // One broken subscriber must not cost the others their events.
        LOG.debug("dropping a subscriber after a send failure: {}", failure.getMessage());
        s.drop();
      }
    }
  }

  public int clients() {
    return subscribers.size();
  }

  public synchronized int attempts(UUID messageId) {
    return attempts.getOrDefault(messageId, 0);
  }

  synchronized void attempted(UUID messageId) {
    attempts.merge(messageId, 1, Integer::sum);
  }

  /**
   * Takes a WebSocket upgrade the HTTP API has checked: {@code known} is the principal of a token sent in a
   * header (null: the first frame authenticates), {@code since} and {@code client} are the validated parameters.
   */
  public void upgrade(HttpServerRequest request, EventTokens.Principal known, Long since, String client) {
    // The upgrade happens on the API instance's event loop; from then on the subscriber is the hub's.
    request.toWebSocket().onSuccess(ws -> {
      ws.pause(); // no frame may arrive before the subscriber's handlers are in place, on the hub's loop
      Subscriber s = new Subscriber(this, bus, vertx, ws, tokens, client, sendQueueBytes);
      if (known != null) {
        s.holdFromNow(known); // a header-authenticated subscriber's live events start at the upgrade, not at the hop
      }
      Hop.send(context, () -> s.begin(known, since));
    }).onFailure(e -> LOG.debug("WebSocket upgrade failed: {}", e.getMessage()));
  }

  /** Runs on the hub's context what a socket event (delivered on the API's) asks of a subscriber. */
  void onHub(Runnable work) {
    Hop.send(context, work);
  }

  void register(Subscriber s) {
    subscribers.add(s);
  }

  void unregister(Subscriber s) {
    subscribers.remove(s);
  }

  static void closeQuietly(ServerWebSocket ws, short code, String reason) {
    if (!ws.isClosed()) {
      ws.close(code, reason);
    }
  }
}
