package dev.ledgerpost.smtp;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SMTP AUTH users from an htpasswd file with bcrypt hashes ({@code htpasswd -B}). Hashing runs on a
 * worker thread: a bcrypt check costs tens of milliseconds and would stall every session on the loop.
 */
public final class HtpasswdAuthenticator implements SmtpSession.Authenticator {
  private static final Logger LOG = LoggerFactory.getLogger(HtpasswdAuthenticator.class);
  /** Checked for unknown users so that timing does not tell which user names exist. */
  private static final String DUMMY_HASH =
      OpenBSDBCrypt.generate("2y", "not-a-password".toCharArray(), new byte[16], 10);

  private final Vertx vertx;
  private final Map<String, String> hashes;

  private HtpasswdAuthenticator(Vertx vertx, Map<String, String> hashes) {
    this.vertx = vertx;
    this.hashes = hashes;
  }

  /** Reads the file (blocking: call from a worker or at start). Lines that are not bcrypt are skipped with a warning. */
  public static HtpasswdAuthenticator load(Vertx vertx, Path file) throws IOException {
    Map<String, String> hashes = new HashMap<>();
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int colon = line.indexOf(':');
      String hash = colon < 0 ? "" : line.substring(colon + 1);
      if (colon <= 0 || !(hash.startsWith("$2y$") || hash.startsWith("$2a$") || hash.startsWith("$2b$"))) {
        LOG.warn("{} line {}: not a bcrypt entry (make one with htpasswd -B); skipped", file, i + 1);
        continue;
      }
      hashes.put(line.substring(0, colon), hash);
    }
    LOG.info("{} SMTP AUTH user(s) loaded from {}", hashes.size(), file);
    return new HtpasswdAuthenticator(vertx, Map.copyOf(hashes));
  }

  @Override
  public Future<Boolean> verify(String user, String password) {
    String hash = hashes.get(user);
    return vertx.executeBlocking(() -> {
      boolean ok = check(hash == null ? DUMMY_HASH : hash, password);
      return ok && hash != null;
    }, false);
  }

  private static boolean check(String hash, String password) {
    try {
      return OpenBSDBCrypt.checkPassword(hash, password.toCharArray());
    } catch (RuntimeException e) {
      return false;
    }
  }
}
