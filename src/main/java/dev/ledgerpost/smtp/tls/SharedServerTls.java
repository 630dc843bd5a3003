package dev.ledgerpost.smtp.tls;

import io.vertx.core.net.NetServer;
import java.lang.reflect.Field;

/**
 * A workaround for Vert.x 5.0.7. When several NetServers share one listening socket (the SMTP intake's
 * instances, one per event loop), only the first gets the SSL context manager that
 * {@code NetSocket.upgradeToSsl} needs: a connection handed to any other instance throws a
 * NullPointerException at STARTTLS. Each instance that shares another's socket is given the first one's
 * manager, right after it starts listening. Remove once the Vert.x stack is upgraded past the bug
 * (NetServerImpl.listen does not set it on the "server already exists" path).
 */
public final class SharedServerTls {
  private SharedServerTls() {}

  public static void shareSslContextManager(NetServer server) {
    try {
      Class<?> impl = server.getClass();
      Field actual = impl.getDeclaredField("actualServer");
      Field manager = impl.getDeclaredField("sslContextManager");
      actual.setAccessible(true);
      manager.setAccessible(true);
      Object first = actual.get(server);
      if (first != null && first != server && manager.get(server) == null) {
        manager.set(server, manager.get(first));
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("cannot share the SMTP listener's TLS set-up between event loops "
          + "(smtp.instances > 1 needs it for STARTTLS); set smtp.instances to 1", e);
    }
  }
}
