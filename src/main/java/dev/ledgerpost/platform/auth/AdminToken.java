package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.PrivateFiles;
import dev.ledgerpost.platform.config.Reloadable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin bearer token: {@code api.adminToken} when it is set, else the token in {@code <data>/admin-token}
 * (next to {@code ledger.dataDir}), generated there on the first start. The file follows the credential files'
 * rule ({@link CredentialFile}): one token on one line, so an emptied or damaged file stops the start instead
 * of becoming an empty token, and SIGHUP reads it again (a rotated token). Blocking.
 */
public final class AdminToken implements Supplier<String> {
  private static final Logger LOG = LoggerFactory.getLogger(AdminToken.class);
  static final String KEY = "api.adminToken";
  /** A token shorter than this is a typo or a placeholder, not a secret. */
  private static final int MIN_LENGTH = 16;

  private final Supplier<String> current;
  private final Reloadable<String> reloadable;

  private AdminToken(Supplier<String> current, Reloadable<String> reloadable) {
    this.current = current;
    this.reloadable = reloadable;
  }

  public static AdminToken load(GatewayConfig config) {
    String configured = config.api().adminToken();
    if (!configured.isEmpty()) {
      return new AdminToken(() -> configured, null);
    }
    Path file = file(config);
    generateIfMissing(file);
    Reloadable<String> r = new Reloadable<>(KEY + " file " + file, () -> read(file), t -> "the admin token");
    return new AdminToken(r, r);
  }

  /** Where a generated token lives: {@code admin-token} next to the embedded ledger's data directory. */
  public static Path file(GatewayConfig config) {
    return fileNextTo(Path.of(config.ledger().dataDir()));
  }

  /** {@code admin-token} next to a data directory: where the CLI looks for the token the gateway generated. */
  public static Path fileNextTo(Path dataDir) {
    return dataDir.toAbsolutePath().getParent().resolve("admin-token");
  }

  static String read(Path file) {
    List<CredentialFile.Entry<String>> tokens = CredentialFile.read(KEY, file, line -> {
      if (line.chars().anyMatch(Character::isWhitespace) || line.length() < MIN_LENGTH) {
        throw new IllegalArgumentException("expected one token of at least " + MIN_LENGTH + " characters without spaces");
      }
      return line;
    });
    if (tokens.isEmpty()) {
      throw new ConfigException(List.of(KEY + " " + file + ": holds no token (delete the file to have a new one generated)"));
    }
    if (tokens.size() > 1) {
      throw new ConfigException(List.of(CredentialFile.where(KEY, file, tokens.get(1).line()) + "the file holds one token only"));
    }
    return tokens.get(0).value();
  }

  /** Owner-only from its first byte and on disk before it is read (PrivateFiles); a second gateway reads the first's. */
  private static void generateIfMissing(Path file) {
    if (Files.exists(file)) {
      return;
    }
    try {
      byte[] random = new byte[24];
      new SecureRandom().nextBytes(random);
      String token = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
      if (PrivateFiles.writeSecret(file, token + "\n")) {
        LOG.info("api.adminToken not configured: generated one into {}", file);
      }
    } catch (IOException e) {
      throw new ConfigException(List.of(KEY + ": not configured, and no token can be written to " + file + ": " + e.getMessage()));
    }
  }

  @Override
  public String get() {
    return current.get();
  }

  /** The holder SIGHUP reloads; empty when the token is the configuration's own. */
  public Optional<Reloadable<?>> reloadable() {
    return Optional.ofNullable(reloadable);
  }
}
