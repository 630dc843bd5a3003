package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.auth.CredentialFile;
import dev.ledgerpost.platform.config.Reloadable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Who a bearer token belongs to: the admin token sees every event and every admin endpoint; a per-user
 * token, stored only as its SHA-256 in {@code notify.tokensFile}, sees the events of messages that user
 * submitted (their SMTP AUTH name). Both are read through holders that SIGHUP reloads ({@link Reloadable});
 * the tokens file follows the credential files' rule ({@link CredentialFile}).
 */
public final class EventTokens {
  public static final String KEY = "notify.tokensFile";
  private static final Pattern USER = Pattern.compile("[^\\s:#]{1,128}");
  private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");

  /** {@code user} null means the administrator. */
  public record Principal(String user) {
    public boolean admin() {
      return user == null;
    }

    public String name() {
      return user == null ? "admin" : user;
    }
  }

  private final Supplier<String> adminToken;
  private final Supplier<Map<String, String>> userByHash;
  private final Reloadable<Map<String, String>> reloadable;

  private EventTokens(Supplier<String> adminToken, Supplier<Map<String, String>> userByHash,
      Reloadable<Map<String, String>> reloadable) {
    this.adminToken = adminToken;
    this.userByHash = userByHash;
    this.reloadable = reloadable;
  }

  /** Fixed tokens (tests). */
  public EventTokens(String adminToken, Map<String, String> userByHash) {
    this(() -> adminToken, () -> Map.copyOf(userByHash), null);
  }

  /** The admin token as its holder gives it now, and the {@code user:sha256hex} lines of the tokens file (blocking). */
  public static EventTokens load(Supplier<String> adminToken, String tokensFile) {
    if (tokensFile == null || tokensFile.isEmpty()) {
      Map<String, String> none = Map.of();
      return new EventTokens(adminToken, () -> none, null);
    }
    Path path = Path.of(tokensFile);
    Reloadable<Map<String, String>> r = new Reloadable<>(KEY + " " + path, () -> read(path),
        users -> users.size() + " per-user event token(s)");
    return new EventTokens(adminToken, r, r);
  }

  static Map<String, String> read(Path file) {
    Map<String, String> byHash = new HashMap<>();
    List<String> twice = new ArrayList<>();
    for (CredentialFile.Entry<String[]> e : CredentialFile.read(KEY, file, EventTokens::parse)) {
      if (byHash.putIfAbsent(e.value()[1], e.value()[0]) != null) {
        twice.add(CredentialFile.where(KEY, file, e.line()) + "the same token is listed twice");
      }
    }
    if (!twice.isEmpty()) {
      throw new ConfigException(twice);
    }
    return Map.copyOf(byHash);
  }

  /** One line: {@code user:sha256-hex}; returns {user, hash}. */
  private static String[] parse(String line) {
    int colon = line.indexOf(':');
    String user = colon < 0 ? "" : line.substring(0, colon).trim();
    String hash = colon < 0 ? "" : line.substring(colon + 1).trim().toLowerCase(Locale.ROOT);
    if (!USER.matcher(user).matches() || !HASH.matcher(hash).matches()) {
      throw new IllegalArgumentException("expected user:sha256-hex-of-token");
    }
    return new String[] {user, hash};
  }

  /** The holder SIGHUP reloads; empty when no tokens file is configured. */
  public Optional<Reloadable<?>> reloadable() {
    return Optional.ofNullable(reloadable);
  }

  /** Whether {@code token} is the admin token (compared in constant time). */
  public boolean isAdmin(String token) {
    return token != null && !token.isEmpty()
        && MessageDigest.isEqual(token.getBytes(StandardCharsets.UTF_8), adminToken.get().getBytes(StandardCharsets.UTF_8));
  }

  public Optional<Principal> authenticate(String token) {
    if (token == null || token.isEmpty()) {
      return Optional.empty();
    }
    if (isAdmin(token)) {
      return Optional.of(new Principal(null));
    }
    String user = userByHash.get().get(sha256(token.getBytes(StandardCharsets.UTF_8)));
    return user == null ? Optional.empty() : Optional.of(new Principal(user));
  }

  public static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
