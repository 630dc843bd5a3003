package dev.ledgerpost.smtp;

import dev.ledgerpost.config.Cidr;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.delivery.SmarthostRelay;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.ServerSSLOptions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SMTP intake: a NetServer whose connections each get a session and a relay transaction. */
public final class SmtpVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(SmtpVerticle.class);

  /** What every SMTP verticle instance shares: built once at start, some of it by blocking work. */
  public record Shared(
      GatewayConfig config,
      String hostname,
      ServerSSLOptions tls,
      SmtpSession.Authenticator authenticator,
      AtomicInteger connections,
      AtomicLong handovers,
      GatewayMetrics metrics) {}

  /** Vert.x's shutdown event cuts at the grace; the sessions' own last call comes this much earlier. */
  private static final long LAST_CALL_MS = 500;

  private final Shared shared;
  private NetServer server;
  private SmarthostRelay relay;
  /** This verticle's open connections (touched on its event loop only), told of a shutdown by {@link #stop}. */
  private final Map<NetSocket, SmtpConnection> open = new HashMap<>();
  private boolean draining;

  public SmtpVerticle(Shared shared) {
    this.shared = shared;
  }

  @Override
  public Future<?> start() {
    GatewayConfig config = shared.config();
    GatewayConfig.Smtp smtp = config.smtp();
    relay = new SmarthostRelay(vertx, config.downstream(), config.delivery(), shared.hostname(), shared.handovers(),
        shared.metrics());
    SmtpSession.Settings settings = new SmtpSession.Settings(shared.hostname(), smtp.maxMessageSize(), smtp.maxRecipients(),
        shared.tls() != null, shared.authenticator() != null, smtp.allowInsecureAuth(), config.delivery().unknownOutcomeReply());
    List<Cidr> networks = smtp.relayNetworks();
    SmtpSession.RelayPolicy policy = ip -> networks.stream().anyMatch(n -> n.contains(ip));
    server = vertx.createNetServer(new NetServerOptions().setTcpNoDelay(true).setHost(smtp.host()).setPort(smtp.port()));
    server.connectHandler(socket -> {
      if (draining) { // accepted while the listener was closing: Vert.x's shutdown event may have missed it
        SmtpConnection.refuse(socket, Replies.SHUTTING_DOWN);
        shared.metrics().smtpReply(Replies.SHUTTING_DOWN.code(), GatewayMetrics.Stage.COMMAND, -1);
        return;
      }
      if (shared.connections().incrementAndGet() > smtp.maxConnections()) {
        shared.connections().decrementAndGet();
        SmtpConnection.refuse(socket, Replies.TOO_MANY_CONNECTIONS);
        shared.metrics().smtpReply(Replies.TOO_MANY_CONNECTIONS.code(), GatewayMetrics.Stage.COMMAND, -1);
        return;
      }
      String ip = socket.remoteAddress() == null ? "unknown" : socket.remoteAddress().hostAddress();
      SmtpSession session = new SmtpSession(settings, relay, shared.authenticator(), policy, ip);
      SmtpConnection connection = new SmtpConnection(vertx, socket, session, shared.tls(), smtp.idleTimeout(),
          smtp.commandTimeout(), () -> {
            shared.connections().decrementAndGet();
            open.remove(socket);
          }, shared.metrics());
      open.put(socket, connection);
      connection.start();
    });
    return server.listen().onSuccess(s -> LOG.info("SMTP listening on {}:{}", smtp.host(), s.actualPort()));
  }

  public int actualPort() {
    return server.actualPort();
  }

  /**
   * Graceful: sessions are told (421 4.3.2 to new commands), transactions in flight finish within the grace.
   * Every client that speaks after this began hears 421 4.3.2 before its connection ends: the sessions
   * are drained here, not only by Vert.x's shutdown event (which misses a connection accepted while the
   * listener closes: those are refused with 421 above), and when the grace is over the sessions still open
   * are told 421 just before Vert.x closes them (it would close them bare).
   */
  @Override
  public Future<?> stop() {
    draining = true;
    List.copyOf(open.values()).forEach(SmtpConnection::onShutdown);
    long grace = shared.config().smtp().shutdownGrace().toMillis();
    long lastCall = vertx.setTimer(Math.max(1, grace - Math.min(LAST_CALL_MS, grace / 2)),
        t -> List.copyOf(open.values()).forEach(SmtpConnection::lastCall));
    return server.shutdown(grace, TimeUnit.MILLISECONDS).eventually(() -> {
      vertx.cancelTimer(lastCall);
      return relay.close();
    });
  }
}
