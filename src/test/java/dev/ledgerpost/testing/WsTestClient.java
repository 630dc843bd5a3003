package dev.ledgerpost.testing;

import io.vertx.core.Vertx;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A real WebSocket client (Vert.x) whose frames the test thread takes one by one, with a deadline. */
public final class WsTestClient implements AutoCloseable {
  private final WebSocketClient client;
  private WebSocket ws;
  private final LinkedBlockingQueue<JsonObject> frames = new LinkedBlockingQueue<>();
  private final CompletableFuture<Short> closed = new CompletableFuture<>();

  private WsTestClient(WebSocketClient client) {
    this.client = client;
  }

  private WsTestClient with(WebSocket socket) {
    this.ws = socket;
    return this;
  }

  /** Runs on the event loop as the connection completes, before any frame can be read and lost. */
  private void attach(WebSocket socket) {
    socket.textMessageHandler(t -> frames.add(new JsonObject(t)));
    socket.closeHandler(v -> closed.complete(socket.closeStatusCode() == null ? (short) -1 : socket.closeStatusCode()));
  }

  /** Connects to {@code /api/v1/events?query} with the token as a bearer header (null: no header). */
  public static WsTestClient connect(Vertx vertx, int port, String query, String token) throws Exception {
    WebSocketClient client = vertx.createWebSocketClient();
    WebSocketConnectOptions o = new WebSocketConnectOptions().setHost("127.0.0.1").setPort(port)
        .setURI("/api/v1/events" + (query == null ? "" : "?" + query));
    if (token != null) {
      o.addHeader("Authorization", "Bearer " + token);
    }
    WsTestClient pending = new WsTestClient(client);
    WebSocket ws = GatewayHarness.await(client.connect(o).map(socket -> {
      pending.attach(socket);
      return socket;
    }));
    return pending.with(ws);
  }

  public JsonObject next(Duration within) throws InterruptedException {
    JsonObject f = frames.poll(within.toMillis(), TimeUnit.MILLISECONDS);
    if (f == null) {
      throw new AssertionError("no frame within " + within);
    }
    return f;
  }

  /** The next frame of type "event", skipping hello frames. */
  public JsonObject nextEvent(Duration within) throws InterruptedException {
    while (true) {
      JsonObject f = next(within);
      if (!"hello".equals(f.getString("type"))) {
        return f;
      }
    }
  }

  public JsonObject poll() {
    return frames.poll();
  }

  public void send(JsonObject frame) {
    ws.writeTextMessage(frame.encode());
  }

  public WebSocket socket() {
    return ws;
  }

  public String isClosedNow() {
    return closed.isDone() ? String.valueOf(closed.getNow((short) 0)) : "open";
  }

  public short awaitClose(Duration within) throws Exception {
    return closed.get(within.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws Exception {
    if (!ws.isClosed()) {
      GatewayHarness.await(ws.close());
    }
    GatewayHarness.await(client.close());
  }
}
