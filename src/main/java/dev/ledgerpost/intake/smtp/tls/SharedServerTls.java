package dev.ledgerpost.intake.smtp.tls;

import io.vertx.core.internal.tls.SslContextManager;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import java.lang.reflect.Field;

/**
 * A workaround for Vert.x 5.0.7. When several NetServers share one listening socket (the SMTP intake's
 * instances, one per event loop), only the first gets the SSL context manager that
 * {@code NetSocket.upgradeToSsl} needs: a connection handed to any other instance throws a
 * NullPointerException at STARTTLS. Each instance that shares another's socket is given a manager of its
 * own, right after it starts listening. Remove once the Vert.x stack is upgraded past the bug
 * (NetServerImpl.listen does not set it on the "server already exists" path).
 *
 * <p>Of its own, not the first one's: a manager hands every upgrade of the same TLS options one cached
 * future, and {@code upgradeToSsl} goes on (writes the 220, then installs the SslHandler once that write is
 * done) on the thread that completes it. Shared between event loops, a STARTTLS on one loop that arrives while
 * the other loop's first STARTTLS builds the context (at start, and after each certificate reload) goes on on
 * the other loop's thread; if its 220 is written before that thread registers the write's listener, the
 * SslHandler is installed by a later task on the connection's own loop, and a client's ClientHello read
 * before it is taken as plaintext and held by Vert.x's paused socket: the handshake stalls until Vert.x's
 * 10 s timeout. With one manager per instance the future is completed on the loop of every connection
 * waiting for it, so the handler is in place before the loop reads again.
 */
public final class SharedServerTls {
  private SharedServerTls() {}

  public static void giveSslContextManager(NetServer server, NetServerOptions options) {
    try {
      Class<?> impl = server.getClass();
      Field actual = impl.getDeclaredField("actualServer");
      Field manager = impl.getDeclaredField("sslContextManager");
      actual.setAccessible(true);
      manager.setAccessible(true);
      Object first = actual.get(server);
      if (first != null && first != server && manager.get(server) == null) {
        // As NetServerImpl.listen makes the first server's.
        manager.set(server, new SslContextManager(
            SslContextManager.resolveEngineOptions(options.getSslEngineOptions(), options.isUseAlpn())));
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("cannot give the SMTP listener's TLS set-up to every event loop "
          + "(smtp.instances > 1 needs it for STARTTLS); set smtp.instances to 1", e);
    }
  }
}
