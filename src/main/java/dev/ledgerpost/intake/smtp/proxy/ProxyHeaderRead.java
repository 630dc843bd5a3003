package dev.ledgerpost.intake.smtp.proxy;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetSocket;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the PROXY header that a trusted proxy sends before anything else, within a deadline. Nothing SMTP
 * happens on the connection meanwhile: the connection limits and the greeting wait for the client's real
 * address. The answer comes on the socket's event loop, synchronously with the read that completed the
 * header, so the SMTP side can take over the socket before another byte arrives.
 */
public final class ProxyHeaderRead {
  private static final Logger LOG = LoggerFactory.getLogger(ProxyHeaderRead.class);

  /** Exactly one of these is called, unless the peer closes first (then neither: nothing was admitted). */
  public interface Outcome {
    /** The header was read; {@code rest} holds the bytes that followed it (the client's own, may be empty). */
    void header(ProxyHeader.Header header, Buffer rest);

    /** No valid header: the reason, for the log; the connection must be closed. */
    void refused(String reason);
  }

  private ProxyHeaderRead() {}

  /** {@code peer}: the proxy's address, for the log. */
  public static void start(Vertx vertx, NetSocket socket, String peer, GatewayConfig.ProxyProtocol versions, Duration deadline,
      Outcome outcome) {
    ProxyHeader parser = new ProxyHeader(versions);
    boolean[] over = {false};
    long timer = vertx.setTimer(Math.max(1, deadline.toMillis()), t -> {
      if (!over[0]) {
        over[0] = true;
        outcome.refused("no complete PROXY header within smtp.proxyTimeout (" + deadline.toMillis() + " ms)");
      }
    });
    socket.closeHandler(v -> {
      if (!over[0]) {
        over[0] = true;
        vertx.cancelTimer(timer);
        LOG.debug("proxy {} closed before its PROXY header was complete", peer);
      }
    });
    socket.exceptionHandler(e -> LOG.debug("socket error from proxy {}: {}", peer, e.getMessage()));
    socket.handler(data -> {
      if (over[0]) {
        return; // refused: the 421 and the close are under way
      }
      switch (parser.feed(data.getBytes())) {
        case NEED_MORE -> { }
        case DONE -> {
          over[0] = true;
          vertx.cancelTimer(timer);
          outcome.header(parser.header(), Buffer.buffer(parser.rest()));
        }
        case MALFORMED -> {
          over[0] = true;
          vertx.cancelTimer(timer);
          outcome.refused(parser.error());
        }
      }
    });
  }
}
