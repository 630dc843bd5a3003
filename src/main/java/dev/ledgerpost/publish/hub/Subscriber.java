package dev.ledgerpost.publish.hub;

import dev.ledgerpost.platform.auth.EventTokens;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.publish.outbox.OutboxEvent;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.publish.outbox.OutboxMessages.History;
import dev.ledgerpost.publish.outbox.OutboxMessages.HistoryPage;
import io.vertx.core.Vertx;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Set;

/**
 * One WebSocket subscriber. While it catches up from history, live events are held back; then they
 * follow, each sent once: an event is sent only if its seq is above the last one sent, which is what
 * makes the seam between history and live free of gaps and duplicates.
 */
final class Subscriber {
  private static final int HISTORY_PAGE = 500;
  /** Live events held back while catching up; a client that needs more is cut loose and resumes. */
  private static final int MAX_HELD = 20_000;
  private static final long AUTH_TIMEOUT_MS = 5_000;
  private static final Set<String> ACK_STATES = Set.of("RECEIVED", "READ");

  private final NotifyHub hub;
  private final Bus bus;
  private final Vertx vertx;
  private final ServerWebSocket ws;
  private final EventTokens tokens;
  private final String client;
  private EventTokens.Principal principal;
  private boolean live;
  private boolean closed;
  private long lastSent;
  private final Deque<OutboxEvent> held = new ArrayDeque<>();
  private final SendQueue out;

  Subscriber(NotifyHub hub, Bus bus, Vertx vertx, ServerWebSocket ws, EventTokens tokens, String client,
      long sendQueueBytes) {
    this.hub = hub;
    this.bus = bus;
    this.vertx = vertx;
    this.out = new SendQueue(ws, sendQueueBytes);
    this.ws = ws;
    this.tokens = tokens;
    this.client = client;
  }

  /**
   * Called on the API's event loop at the upgrade: from now on the hub holds this subscriber's live
   * events (until {@link #begin} on the hub's loop sends the history and goes live).
   */
  void holdFromNow(EventTokens.Principal known) {
    principal = known;
    hub.register(this);
  }

  void begin(EventTokens.Principal known, Long since) {
    // Socket events come on the API instance's event loop; everything a subscriber does runs on the hub's.
    ws.closeHandler(v -> hub.onHub(() -> {
      closed = true;
      hub.unregister(this);
    }));
    ws.textMessageHandler(text -> hub.onHub(() -> onText(text)));
    ws.exceptionHandler(e -> {});
    if (known != null) {
      authenticated(known, since);
      ws.resume(); // paused by the hub until these handlers were in place
      return;
    }
    // No header (browsers cannot set one): the first frame must be {"type":"auth","token":"..."}.
    long timer = vertx.setTimer(AUTH_TIMEOUT_MS, t -> {
      if (principal == null) {
        NotifyHub.closeQuietly(ws, NotifyHub.CLOSE_UNAUTHORIZED, "authenticate within 5 s");
      }
    });
    ws.textMessageHandler(text -> hub.onHub(() -> {
      JsonObject msg = parse(text);
      EventTokens.Principal p = msg == null || !"auth".equals(msg.getString("type"))
          ? null
          : tokens.authenticate(msg.getString("token")).orElse(null);
      vertx.cancelTimer(timer);
      if (p == null) {
        NotifyHub.closeQuietly(ws, NotifyHub.CLOSE_UNAUTHORIZED, "not authenticated");
        return;
      }
      ws.textMessageHandler(frame -> hub.onHub(() -> onText(frame)));
      authenticated(p, since);
    }));
    ws.resume(); // paused by the hub until these handlers were in place
  }

  private void authenticated(EventTokens.Principal p, Long since) {
    principal = p;
    hub.register(this); // from here live events are held until the history is sent
    send(new JsonObject().put("type", "hello").put("subscriber", name()));
    if (since == null) {
      // Live only: every event the hub hands out from the registration on, none before it. On the hub's
      // context the hub's own count tells where that is: events it handed out since are held here.
      lastSent = held.isEmpty() ? hub.lastOffered() : held.peek().pubSeq() - 1;
      goLive();
    } else {
      lastSent = since;
      page();
    }
  }

  private void page() {
    if (closed) {
      return;
    }
    bus.request(OutboxMessages.HISTORY, new History(lastSent, HISTORY_PAGE, principal.user()), HistoryPage.class)
        .onComplete(ar -> {
          if (ar.failed()) {
            NotifyHub.closeQuietly(ws, (short) 1011, "history unavailable; reconnect later");
            return;
          }
          HistoryPage page = ar.result();
          // Events after `since` were deleted by retention; or `since` is beyond the newest event, a position this
          // ledger never gave out (another ledger's, a restored one's): going on from it would silently skip every
          // event up to that number (issue 26). Either way the client re-reads state from the API, live events follow.
          if (lastSent < page.prunedThrough() || lastSent > page.lastPubSeq()) {
            send(new JsonObject().put("type", "reset").put("seq", page.lastPubSeq()));
            lastSent = page.lastPubSeq();
            goLive();
            return;
          }
          for (OutboxEvent e : page.events()) {
            deliver(e);
          }
          // Events this subscriber may not see were looked at too: the next page starts after them.
          lastSent = Math.max(lastSent, page.scannedThrough());
          if (page.scannedThrough() >= page.lastPubSeq()) {
            goLive();
          } else if (out.full()) {
            out.whenDrained(() -> hub.onHub(this::page));
          } else {
            page();
          }
        });
  }

  private void goLive() {
    live = true;
    OutboxEvent e;
    while ((e = held.poll()) != null) {
      offer(e);
    }
  }

  /** Forgets this subscriber after a failure; closes the socket if it is still open. */
  void drop() {
    closed = true;
    hub.unregister(this);
    held.clear();
    if (!ws.isClosed()) {
      ws.close();
    }
  }

  /** A live event from the relay. */
  void offer(OutboxEvent e) {
    if (closed || principal == null || !visible(e)) {
      return;
    }
    if (ws.isClosed()) {
      drop(); // closed by the peer; our close handler has not run yet
      return;
    }
    if (!live) {
      if (held.size() >= MAX_HELD) {
        tooSlow();
      } else {
        held.add(e);
      }
      return;
    }
    if (e.pubSeq() <= lastSent) {
      return;
    }
    if (out.full()) {
      tooSlow();
      return;
    }
    deliver(e);
  }

  private void deliver(OutboxEvent e) {
    if (e.pubSeq() <= lastSent) {
      return; // the seam between history and live: each seq once
    }
    JsonObject frame = new JsonObject()
        .put("type", "event")
        .put("seq", e.pubSeq())
        .put("id", e.eventId())
        .put("event", e.type())
        .put("messageId", e.messageId().toString())
        .put("at", e.createdAt() == null ? null : e.createdAt().toString())
        .put("data", new JsonObject(e.payload()));
    send(frame);
    lastSent = e.pubSeq();
    hub.attempted(e.messageId());
  }

  private boolean visible(OutboxEvent e) {
    return principal.admin() || principal.user().equals(e.authUser());
  }

  void tooSlow() {
    closed = true;
    hub.unregister(this);
    held.clear();
    NotifyHub.closeQuietly(ws, NotifyHub.CLOSE_TOO_SLOW, "too slow; reconnect with since=" + lastSent);
  }

  private void onText(String text) {
    JsonObject msg = parse(text);
    Long seq = msg == null ? null : msg.getLong("ack");
    String state = msg == null ? null : msg.getString("state", "RECEIVED");
    if (seq == null || !ACK_STATES.contains(state)) {
      send(new JsonObject().put("type", "error").put("message", "expected {\"ack\": <seq>, \"state\": \"RECEIVED\"|\"READ\"}"));
      return;
    }
    // The ledger checks that this subscriber could see the event (its user's, or any for the admin token): a
    // per-user token must not write facts into another user's operation status.
    bus.request(OutboxMessages.RECEIPT, new OutboxMessages.Receipt(seq, name(), state, principal.user()),
            OutboxMessages.ReceiptStored.class)
        .onSuccess(r -> {
          if (!r.stored()) {
            send(new JsonObject().put("type", "error").put("ack", seq)
                .put("message", "receipt not stored: no event " + seq + " exists that this subscriber can see"));
          }
        })
        .onFailure(e -> send(new JsonObject().put("type", "error").put("ack", seq)
            .put("message", "receipt not stored; send it again")));
  }

  private String name() {
    return client == null || client.isEmpty() ? principal.name() : principal.name() + "/" + client;
  }

  private void send(JsonObject frame) {
    if (!closed && !ws.isClosed()) {
      out.write(frame.encode());
    }
  }

  private static JsonObject parse(String text) {
    try {
      return new JsonObject(text);
    } catch (DecodeException | ClassCastException e) {
      return null;
    }
  }
}
