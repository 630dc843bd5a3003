package dev.ledgerpost;

import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGHUP reloads the credentials (docs/design.md §11.2). The JVM's own reaction to SIGHUP is to shut down;
 * the handler is installed before the gateway starts so that a SIGHUP during the start is ignored, not a
 * stop. The reload runs on the signal's thread: it is file work, never on an event loop.
 */
final class Hangup {
  private static final Logger LOG = LoggerFactory.getLogger(Hangup.class);

  private Hangup() {}

  static void install(Supplier<Gateway> running) {
    try {
      SignalHandler previous = Signal.handle(new Signal("HUP"), signal -> {
        Gateway gateway = running.get();
        if (gateway == null) {
          LOG.warn("SIGHUP while the gateway is not running: nothing to reload");
          return;
        }
        gateway.reloadCredentials();
      });
      if (previous == SignalHandler.SIG_IGN) {
        // Started with SIGHUP ignored (nohup, or a supervisor that ignores it): the JVM then never hooks the signal,
        // and this handler would silently never run.
        LOG.warn("SIGHUP is ignored in this process (started under nohup?): credentials are read at start only, "
            + "until the gateway is started without ignoring SIGHUP");
      }
    } catch (IllegalArgumentException e) {
      // No SIGHUP on this platform (or the JVM runs with -Xrs): credentials are read at start only.
      LOG.warn("SIGHUP cannot be handled here ({}): credentials are read at start only", e.getMessage());
    }
  }
}
