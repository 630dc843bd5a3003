package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.intake.smtp.tls.SharedServerTls;
import dev.ledgerpost.intake.smtp.proxy.ProxyHeader;
import dev.ledgerpost.intake.smtp.proxy.ProxyHeaderRead;
import dev.ledgerpost.operate.tracking.ReturnedDsns;
import dev.ledgerpost.platform.config.Cidr;
import dev.ledgerpost.platform.config.Durations;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.relay.capture.Capture;
import dev.ledgerpost.relay.smarthost.SmarthostRelay;
import dev.ledgerpost.relay.smarthost.Smarthosts;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.ServerSSLOptions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SMTP intake: a NetServer whose connections each get a session and a relay transaction. */
public final class SmtpVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(SmtpVerticle.class);

  /**
   * What every SMTP verticle instance shares: built once at start, some of it by blocking work. The
   * limits ({@code connections}, {@code perAddress}, the guards, {@code downstreamSlots}, {@code smarthosts}) are per process:
   * thread-safe objects that every instance, on whatever event loop, counts against.
   */
  public record Shared(
      GatewayConfig config,
      String hostname,
      Supplier<ServerSSLOptions> tls, // one holder for every instance: a SIGHUP reload reaches them all
      SmtpSession.Authenticator authenticator,
      AtomicInteger connections,
      Smarthosts smarthosts,
      GatewayMetrics metrics,
      SmtpSession.Guards guards,
      AddressConnections perAddress,
      AtomicBoolean draining,
      Capture capture) {

    /** Without capture mode (a door run alone): every transaction goes to the smarthost. */
    public Shared(GatewayConfig config, String hostname, Supplier<ServerSSLOptions> tls, SmtpSession.Authenticator authenticator,
        AtomicInteger connections, Smarthosts smarthosts, GatewayMetrics metrics, SmtpSession.Guards guards,
        AddressConnections perAddress, AtomicBoolean draining) {
      this(config, hostname, tls, authenticator, connections, smarthosts, metrics, guards, perAddress, draining, Capture.off());
    }
  }

  private final Shared shared;
  private final int port;
  private NetServer server;
  private SmarthostRelay relay;
  // What every connection of this instance is served with, set at start.
  private SmtpSession.Setup sessions;
  private SmtpConnection.Setup connections;
  /** This verticle's open connections (touched on its event loop only), told of a shutdown by {@link #stop}. */
  private final Map<NetSocket, SmtpConnection> open = new HashMap<>();

  /**
   * One of the intake's instances: every instance binds the same {@code port} (for a configured 0, one
   * negative number Vert.x reads as a random port shared by every server that names it), so that they share
   * one socket, each on its own event loop with its own relay.
   */
  public SmtpVerticle(Shared shared, int port) {
    this.shared = shared;
    this.port = port;
  }

  @Override
  public Future<?> start() {
    GatewayConfig config = shared.config();
    GatewayConfig.Smtp smtp = config.smtp();
    relay = shared.smarthosts().relayOn(vertx);
    SmtpSession.Settings settings = new SmtpSession.Settings(shared.hostname(), smtp.maxMessageSize(), smtp.maxRecipients(),
        shared.tls() != null, shared.authenticator() != null, smtp.allowInsecureAuth(), config.delivery().unknownOutcomeReply(),
        smtp.stripControlHeaders());
    List<Cidr> networks = smtp.relayNetworks();
    // A captured user's transactions never reach the smarthost relay: the AUTH user is known before MAIL (§8.10).
    sessions = new SmtpSession.Setup(settings, shared.capture().over(relay), shared.authenticator(), new RelayNetworks(networks),
        shared.guards(), ReturnedDsns.over(vertx));
    NetServerOptions options = new NetServerOptions().setTcpNoDelay(true).setHost(smtp.host()).setPort(port);
    server = vertx.createNetServer(options);
    connections = new SmtpConnection.Setup(vertx, shared.tls(), smtp.idleTimeout(), smtp.commandTimeout(),
        new SmtpConnection.DataRate(smtp.minDataRate(), smtp.minDataRateGrace()), shared.metrics());
    server.connectHandler(socket -> {
      if (shared.draining().get()) { // accepted while the listener was closing: Vert.x's shutdown event may have missed it
        refuse(socket, Replies.SHUTTING_DOWN);
        return;
      }
      String peer = SmtpConnection.clientAddress(socket);
      GatewayConfig.Proxy proxy = smtp.proxy();
      if (proxy.expectsHeaderFrom(peer)) {
        readProxyHeader(socket, peer, proxy);
      } else {
        serve(socket, peer, Buffer.buffer(), proxy.protocol() != GatewayConfig.ProxyProtocol.NONE);
      }
    });
    // The first instance asks the smarthosts what they offer before the intake listens, so that the first
    // client's EHLO already offers what depends on them (DSN, BINARYMIME: docs/contract.md §1.1).
    Future<Void> probed = shared.smarthosts().claimProbe() ? relay.probe() : Future.succeededFuture();
    return probed.compose(v -> server.listen()).onSuccess(s -> {
      SharedServerTls.giveSslContextManager(s, options);
      LOG.info("SMTP listening on {}:{}", smtp.host(), s.actualPort());
    });
  }

  /** A trusted proxy: its header comes first, and only then is the client known (and limited, and greeted). */
  private void readProxyHeader(NetSocket socket, String peer, GatewayConfig.Proxy proxy) {
    ProxyHeaderRead.start(vertx, socket, peer, proxy.protocol(), proxy.timeout(), new ProxyHeaderRead.Outcome() {
      @Override
      public void header(ProxyHeader.Header header, Buffer rest) {
        String client = header.clientAddress() == null ? peer : header.clientAddress();
        LOG.debug("proxy {} passes on client {}:{} (PROXY v{})", peer, client, header.clientPort(), header.version());
        if (shared.draining().get()) { // shutdown began while the header was on its way
          refuse(socket, Replies.SHUTTING_DOWN);
          return;
        }
        serve(socket, client, rest, false);
      }

      @Override
      public void refused(String reason) {
        LOG.warn("SMTP connection from proxy {} closed: {}", peer, reason);
        refuse(socket, Replies.PROXY_HEADER_REQUIRED);
      }
    });
  }

  /**
   * Admits and serves one client at its address (the socket's, or the PROXY header's): the session and
   * every per-address rule see {@code ip}. {@code early}: bytes that came with the PROXY header.
   */
  private void serve(NetSocket socket, String ip, Buffer early, boolean refuseProxyHeader) {
    Runnable release = admit(ip, sessions.policy().mayRelayWithoutAuth(ip), socket);
    if (release == null) {
      return;
    }
    SmtpSession session = new SmtpSession(sessions, ip);
    SmtpConnection connection = new SmtpConnection(connections, socket, session, () -> {
      release.run();
      open.remove(socket);
    });
    if (refuseProxyHeader) {
      connection.refuseProxyHeader();
    }
    open.put(socket, connection);
    connection.start(early);
  }

  private void refuse(NetSocket socket, Reply reply) {
    SmtpConnection.refuse(socket, reply);
    shared.metrics().smtpReply(reply.code(), GatewayMetrics.Stage.COMMAND, -1);
  }

  /**
   * The connect-time limits, in this order: a banned address, the process's connection cap, the cap per
   * address (relay networks are exempt, as Postfix exempts mynetworks from anvil's limits). Returns what
   * to run when the connection closes, or null after refusing it with one 421.
   */
  private Runnable admit(String ip, boolean trusted, NetSocket socket) {
    Reply refusal = null;
    if (shared.guards().throttle().banned(ip)) {
      refusal = Replies.BANNED;
    } else if (shared.connections().incrementAndGet() > shared.config().smtp().maxConnections()) {
      shared.connections().decrementAndGet();
      refusal = Replies.TOO_MANY_CONNECTIONS;
    } else if (!trusted && !shared.perAddress().tryOpen(ip)) {
      shared.connections().decrementAndGet();
      refusal = Replies.TOO_MANY_FROM_ADDRESS;
    }
    if (refusal != null) {
      refuse(socket, refusal);
      return null;
    }
    return () -> {
      shared.connections().decrementAndGet();
      if (!trusted) {
        shared.perAddress().closed(ip);
      }
    };
  }

  public int actualPort() {
    return server.actualPort();
  }

  /**
   * Graceful: sessions are told (421 4.3.2 to new commands), transactions in flight finish within the grace.
   * Every client that speaks after this began hears 421 4.3.2 before its connection ends: the sessions
   * are drained here, not only by Vert.x's shutdown event (which misses a connection accepted while the
   * listener closes: those are refused with 421 above).
   *
   * <p>When the grace is over, every session that is not waiting for an answer is told 421 and closed, and the
   * relay closes every smarthost connection but those whose final dot is already at the smarthost: their
   * transactions end with nothing delivered and their clients hear a 451, then 421. A message past its final dot
   * is let finish (issue 26: cut, it went UNKNOWN and its client sent it again): its verdict comes within
   * {@code downstream.dataTimeout}, is settled and answered, then 421. Vert.x's own cut, for anything still open,
   * comes only at {@link GatewayConfig#intakeStopBound}.
   */
  @Override
  public Future<?> stop() {
    shared.draining().set(true); // every instance refuses new connections from now on
    List.copyOf(open.values()).forEach(SmtpConnection::onShutdown);
    Duration grace = shared.config().smtp().shutdownGrace();
    long graceOver = vertx.setTimer(Math.max(1, grace.toMillis()), t -> {
      List.copyOf(open.values()).forEach(SmtpConnection::lastCall);
      relay.stop();
      int finishing = relay.awaitingVerdict();
      if (finishing > 0) {
        LOG.info("smtp.shutdownGrace ({}) is over: {} message(s) past the final dot wait for the smarthost's verdict, "
            + "at most downstream.dataTimeout ({})", Durations.format(grace), finishing,
            Durations.format(shared.config().downstream().dataTimeout()));
      }
    });
    return server.shutdown(shared.config().intakeStopBound().toMillis(), TimeUnit.MILLISECONDS).eventually(() -> {
      vertx.cancelTimer(graceOver);
      return relay.close();
    });
  }
}
