package dev.ledgerpost.smtp;

import dev.ledgerpost.config.Cidr;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.delivery.SmarthostRelay;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.ServerSSLOptions;
import java.util.List;
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

  private final Shared shared;
  private NetServer server;
  private SmarthostRelay relay;

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
      if (shared.connections().incrementAndGet() > smtp.maxConnections()) {
        shared.connections().decrementAndGet();
        SmtpConnection.refuse(socket, Replies.TOO_MANY_CONNECTIONS);
        shared.metrics().smtpReply(Replies.TOO_MANY_CONNECTIONS.code(), GatewayMetrics.Stage.COMMAND, -1);
        return;
      }
      String ip = socket.remoteAddress() == null ? "unknown" : socket.remoteAddress().hostAddress();
      SmtpSession session = new SmtpSession(settings, relay, shared.authenticator(), policy, ip);
      new SmtpConnection(vertx, socket, session, shared.tls(), smtp.idleTimeout(), smtp.commandTimeout(),
          () -> shared.connections().decrementAndGet(), shared.metrics()).start();
    });
    return server.listen().onSuccess(s -> LOG.info("SMTP listening on {}:{}", smtp.host(), s.actualPort()));
  }

  public int actualPort() {
    return server.actualPort();
  }

  /** Graceful: sessions are told (421 4.3.2 to new commands), transactions in flight finish within the grace. */
  @Override
  public Future<?> stop() {
    long grace = shared.config().smtp().shutdownGrace().toMillis();
    return server.shutdown(grace, TimeUnit.MILLISECONDS).eventually(() -> relay.close());
  }
}
