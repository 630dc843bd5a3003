package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.auth.CredentialFile;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/**
 * The key of the erasure's hash (docs/design.md §8.6): {@code ledger.erasureKey}, else the one line of
 * {@code ledger.erasureKeyFile}, else {@code <data>/erasure-key} (next to the admin token), 32 random bytes written
 * there as hex on the first erasure. The key's text (UTF-8) is the HMAC key. It lives apart from the ledger on
 * purpose: whoever holds a copy of the database without it cannot test guessed addresses against the hashes. Read
 * at every erasure (a rotated file counts from the next one). Blocking: on a worker. {@code configured}: the key
 * itself, or empty; {@code file}: where it is read (or generated) otherwise; {@code fileKey}: the key naming that file.
 */
public record ErasureKey(String configured, Path file, String fileKey) {
  static final String KEY = "ledger.erasureKey";
  static final String FILE_KEY = "ledger.erasureKeyFile";
  static final int MIN_LENGTH = 32;

  public static ErasureKey of(GatewayConfig.Ledger ledger) {
    if (!ledger.erasureKeyFile().isEmpty()) {
      return new ErasureKey("", Path.of(ledger.erasureKeyFile()), FILE_KEY);
    }
    return new ErasureKey(ledger.erasureKey(), generatedFile(ledger), KEY);
  }

  /** Where a generated key lives: {@code erasure-key} next to the embedded ledger's data directory. */
  public static Path generatedFile(GatewayConfig.Ledger ledger) {
    return Path.of(ledger.dataDir()).toAbsolutePath().getParent().resolve("erasure-key");
  }

  /** The key's bytes; generates the file first when nothing is configured and it does not exist yet. */
  public byte[] read() {
    if (!configured.isEmpty()) {
      return configured.getBytes(StandardCharsets.UTF_8);
    }
    if (KEY.equals(fileKey)) {
      generateIfMissing(file);
    }
    List<CredentialFile.Entry<String>> keys = CredentialFile.read(fileKey, file, line -> {
      if (line.length() < MIN_LENGTH || line.chars().anyMatch(Character::isWhitespace)) {
        throw new IllegalArgumentException("expected one key of at least " + MIN_LENGTH + " characters without spaces");
      }
      return line;
    });
    if (keys.size() != 1) {
      throw new ConfigException(List.of(fileKey + " " + file + ": " + (keys.isEmpty() ? "holds no key" : "holds more than one key")
          + "; the erasure needs exactly one"));
    }
    return keys.get(0).value().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Owner-only from its first byte, and on disk (the file and its directory) before its first use: a key lost to a
   * crash after an erasure used it would make later erasures' hashes unrelated to earlier ones (PrivateFiles). Two
   * gateways sharing the directory never overwrite each other's key; the second reads the first's.
   */
  private static void generateIfMissing(Path file) {
    try {
      if (PrivateFiles.generateKey(file)) {
        org.slf4j.LoggerFactory.getLogger(ErasureKey.class).info("{} not configured: generated one into {}", KEY, file);
      }
    } catch (IOException e) {
      throw new ConfigException(List.of(KEY + ": not configured, and no key can be written to " + file + ": " + e.getMessage()));
    }
  }
}
