package dev.ledgerpost;

import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * SIGHUP reloads the credentials (docs/design.md §4.8). The JVM's own reaction to SIGHUP is to shut down;
 * the handler is installed before the gateway starts so that a SIGHUP during the start is ignored, not a
 * stop. The reload runs on the signal's thread: it is file work, never on an event loop.
 */
final class Hangup {
  private static final Logger LOG = LoggerFactory.getLogger(Hangup.class);

  private Hangup() {}

  static void install(Supplier<Gateway> running) {
    try {
      Signal.handle(new Signal("HUP"), signal -> {
        Gateway gateway = running.get();
        if (gateway == null) {
          LOG.warn("SIGHUP while the gateway is not running: nothing to reload");
          return;
        }
        gateway.reloadCredentials();
      });
    } catch (IllegalArgumentException e) {
      // No SIGHUP on this platform (or the JVM runs with -Xrs): credentials are read at start only.
      LOG.warn("SIGHUP cannot be handled here ({}): credentials are read at start only", e.getMessage());
    }
  }
}
