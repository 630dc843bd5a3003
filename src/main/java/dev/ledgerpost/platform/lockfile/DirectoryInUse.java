package dev.ledgerpost.platform.lockfile;

import dev.ledgerpost.platform.config.StartFailure;

/**
 * A directory this gateway would own is another running gateway's: its lock file ({@link LockFile}) is held.
 * The message is the whole story in one line, naming the holder's PID; start-up ends with it (exit status 1)
 * and no stack trace unless {@code --verbose}.
 */
public final class DirectoryInUse extends StartFailure {
  DirectoryInUse(String message, Throwable cause) {
    super(message, cause);
  }
}
