package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.auth.CredentialFile;
import dev.ledgerpost.platform.config.Reloadable;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;

/**
 * SMTP AUTH users from an htpasswd file with bcrypt hashes ({@code htpasswd -B}). Hashing runs on a
 * worker thread: a bcrypt check costs tens of milliseconds and would stall every session on the loop.
 * The file follows the credential files' rule ({@link CredentialFile}: a line that is not a bcrypt entry
 * is an error, not skipped) and is read again on SIGHUP; every SMTP verticle instance reads the users
 * through this one object.
 */
public final class HtpasswdAuthenticator {
  public static final String KEY = "auth.usersFile";
  private static final Pattern USER = Pattern.compile("[^\\s:#]{1,128}");
  private static final Pattern BCRYPT = Pattern.compile("\\$2[aby]\\$\\d{2}\\$[./A-Za-z0-9]{53}");
  /** Checked for unknown users so that timing does not tell which user names exist. */
  private static final String DUMMY_HASH =
      OpenBSDBCrypt.generate("2y", "not-a-password".toCharArray(), new byte[16], 10);

  private final Vertx vertx;
  private final Reloadable<Map<String, String>> hashes;

  private HtpasswdAuthenticator(Vertx vertx, Reloadable<Map<String, String>> hashes) {
    this.vertx = vertx;
    this.hashes = hashes;
  }

  /** Reads the file (blocking: call from a worker or at start); a bad line stops the start naming the file and the line. */
  public static HtpasswdAuthenticator load(Vertx vertx, Path file) {
    return new HtpasswdAuthenticator(vertx, new Reloadable<>(KEY + " " + file, () -> read(file),
        users -> users.size() + " SMTP AUTH user(s)"));
  }

  static Map<String, String> read(Path file) {
    Map<String, String> hashes = new HashMap<>();
    List<String> twice = new ArrayList<>();
    for (CredentialFile.Entry<String[]> e : CredentialFile.read(KEY, file, HtpasswdAuthenticator::parse)) {
      if (hashes.putIfAbsent(e.value()[0], e.value()[1]) != null) {
        twice.add(CredentialFile.where(KEY, file, e.line()) + "user '" + e.value()[0] + "' is listed twice");
      }
    }
    if (!twice.isEmpty()) {
      throw new ConfigException(twice);
    }
    return Map.copyOf(hashes);
  }

  /** One line: {@code user:$2y$cost$salt-and-hash}; returns {user, hash}. */
  private static String[] parse(String line) {
    int colon = line.indexOf(':');
    String user = colon < 0 ? "" : line.substring(0, colon);
    String hash = colon < 0 ? "" : line.substring(colon + 1);
    if (!USER.matcher(user).matches()) {
      throw new IllegalArgumentException("expected user:bcrypt-hash (make one with htpasswd -B)");
    }
    if (!BCRYPT.matcher(hash).matches()) {
      throw new IllegalArgumentException("the hash of '" + user + "' is not bcrypt (make one with htpasswd -B)");
    }
    return new String[] {user, hash};
  }

  /** The holder SIGHUP reloads. */
  public Reloadable<?> reloadable() {
    return hashes;
  }

  public Future<Boolean> verify(String user, String password) {
    String hash = hashes.get().get(user);
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
