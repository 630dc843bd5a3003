package dev.ledgerpost.platform.config;

/**
 * A start that cannot go on for a reason an operator can act on (a port in use, the embedded PostgreSQL
 * not starting): {@code Main} prints the message, one line or a line and a log's last lines, with no stack
 * trace unless {@code --verbose}, and exits with status 1. Configuration errors are {@code ConfigException}
 * (status 2).
 */
public class StartFailure extends RuntimeException {
  public StartFailure(String message, Throwable cause) {
    super(message, cause);
  }
}
