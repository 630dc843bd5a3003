package dev.ledgerpost.platform.db;

import dev.ledgerpost.platform.config.StartFailure;

/**
 * The embedded ledger's data directory cannot be used: another live gateway holds it, or a server an
 * earlier gateway left running would not stop. The message is the whole story in one line, for an
 * operator; start-up ends with it and no stack trace (see {@link DataDirectoryGuard}).
 */
public final class DataDirectoryUnavailable extends StartFailure {
  DataDirectoryUnavailable(String message, Throwable cause) {
    super(message, cause);
  }
}
