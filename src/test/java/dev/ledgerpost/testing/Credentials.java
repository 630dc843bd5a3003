package dev.ledgerpost.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Map;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;

/** Credential files for a test's gateway, each in a fresh directory: SMTP users (htpasswd) and event tokens. */
public final class Credentials {
  private static final SecureRandom RANDOM = new SecureRandom();

  private Credentials() {}

  /** A bcrypt hash at the lowest cost bcrypt allows: tests check AUTH, not the hash's strength. */
  public static String bcrypt(String password) {
    byte[] salt = new byte[16];
    RANDOM.nextBytes(salt);
    return OpenBSDBCrypt.generate("2y", password.toCharArray(), salt, 4);
  }

  /** An {@code auth.usersFile} with one {@code user:bcrypt} line per user (user to password). */
  public static Path htpasswd(Map<String, String> passwords) {
    StringBuilder lines = new StringBuilder("# htpasswd -B format\n");
    passwords.forEach((user, password) -> lines.append(user).append(':').append(bcrypt(password)).append('\n'));
    return write("users-", "users.htpasswd", lines.toString());
  }

  /** A {@code notify.tokensFile} with one {@code user:sha256(token)} line per user (user to token). */
  public static Path eventTokens(Map<String, String> tokens) {
    StringBuilder lines = new StringBuilder();
    tokens.forEach((user, token) -> lines.append(user).append(':').append(SendClient.sha256(token)).append('\n'));
    return write("event-tokens-", "event-tokens", lines.toString());
  }

  /** {@code text} in a file {@code name} of a fresh directory. */
  public static Path write(String prefix, String name, String text) {
    try {
      Path file = GatewayHarnessDirs.fresh(prefix).resolve(name);
      Files.writeString(file, text, StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
