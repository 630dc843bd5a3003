package dev.ledgerpost.platform.config;

import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Credentials read from a file, held once per process and read by every event loop through this holder (the
 * SMTP verticle instances, the API), never copied per instance, so one reload reaches them all. The first
 * load happens at construction and a bad file stops the start; {@link #reload} (SIGHUP) replaces the content
 * only when the whole file is good: with a bad line the previous content stays and the error is logged.
 * Reads are a volatile load; reloads are serialised.
 */
public final class Reloadable<T> implements Supplier<T> {
  private static final Logger LOG = LoggerFactory.getLogger(Reloadable.class);

  private final String source;
  private final Supplier<T> loader;
  private final Function<T, String> describe;
  private volatile T current;

  /**
   * @param source   what is read, for the log ("api.keysFile /etc/ledgerpost/api-keys")
   * @param loader   reads the file; throws {@link ConfigException} naming every bad line
   * @param describe what was loaded, for the log ("3 send API key(s)")
   */
  public Reloadable(String source, Supplier<T> loader, Function<T, String> describe) {
    this.source = source;
    this.loader = loader;
    this.describe = describe;
    this.current = loader.get();
    LOG.info("{}: {}", source, describe.apply(current));
  }

  @Override
  public T get() {
    return current;
  }

  public String source() {
    return source;
  }

  /** Reads the file again. True when the new content is in use; false (logged) when the previous content stays. */
  public synchronized boolean reload() {
    try {
      T next = loader.get();
      current = next;
      LOG.info("reloaded {}: {}", source, describe.apply(next));
      return true;
    } catch (ConfigException e) {
      LOG.error("{} not reloaded, still using the previous content ({}): {}", source, describe.apply(current),
          String.join("; ", e.problems()));
      return false;
    } catch (RuntimeException e) {
      LOG.error("{} not reloaded, still using the previous content ({}): {}", source, describe.apply(current), e.toString());
      return false;
    }
  }
}
