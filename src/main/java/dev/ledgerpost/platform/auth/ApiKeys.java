package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.auth.CredentialFile;
import dev.ledgerpost.platform.config.Reloadable;
import dev.ledgerpost.platform.auth.EventTokens;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * The send API's keys, one per line of the keys file: {@code user:<sha256 hex of the key>[:<requests per
 * second>][:capture]}; a trailing {@code capture} marks a capturing key: its mail is kept, never relayed (docs/design.md
 * §8.10). Only hashes are stored, so the file can be read by more people than the keys themselves.
 * The user is recorded as the message's auth user, as an SMTP AUTH name would be. The file follows the
 * credential files' rule ({@link CredentialFile}) and is read again on SIGHUP ({@link Reloadable}).
 */
public final class ApiKeys {
  public static final String KEY = "api.keysFile";
  public static final Pattern USER = Pattern.compile("[^\\s:#]{1,128}");
  private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");

  /** The trailing field that marks a capturing key. */
  public static final String CAPTURE = "capture";

  /**
   * {@code id} is the key's SHA-256: the scope of its idempotency keys and its rate-limit bucket. {@code capture}: its
   * mail is captured whatever the tenants file says of its user.
   */
  public record ApiKey(String user, String id, double rate, boolean capture) {
    public ApiKey(String user, String id, double rate) {
      this(user, id, rate, false);
    }
  }

  private final Supplier<Map<String, ApiKey>> byHash;
  private final Reloadable<Map<String, ApiKey>> reloadable;

  private ApiKeys(Supplier<Map<String, ApiKey>> byHash, Reloadable<Map<String, ApiKey>> reloadable) {
    this.byHash = byHash;
    this.reloadable = reloadable;
  }

  /**
   * Reads the keys file (blocking: at start, on a worker). A malformed line stops the start: a key the
   * operator meant to grant must not silently fail every request. No file: no keys.
   */
  public static ApiKeys load(String file, double defaultRate) {
    if (file == null || file.isEmpty()) {
      Map<String, ApiKey> none = Map.of();
      return new ApiKeys(() -> none, null);
    }
    Path path = Path.of(file);
    Reloadable<Map<String, ApiKey>> r = new Reloadable<>(KEY + " " + path, () -> read(path, defaultRate),
        keys -> keys.size() + " send API key(s)");
    return new ApiKeys(r, r);
  }

  /** Checks a keys file as the gateway would read it, without loading it (the CLI, before it appends). */
  public static void check(Path file) {
    read(file, 1);
  }

  /** The keys of {@code file}, checked line by line. */
  static Map<String, ApiKey> read(Path file, double defaultRate) {
    Map<String, ApiKey> byHash = new HashMap<>();
    List<String> twice = new ArrayList<>();
    for (CredentialFile.Entry<ApiKey> e : CredentialFile.read(KEY, file, line -> parse(line, defaultRate))) {
      if (byHash.putIfAbsent(e.value().id(), e.value()) != null) {
        twice.add(CredentialFile.where(KEY, file, e.line()) + "the same key is listed twice");
      }
    }
    if (!twice.isEmpty()) {
      throw new ConfigException(twice);
    }
    return Map.copyOf(byHash);
  }

  /** One line: {@code user:sha256-hex[:rate][:capture]}. */
  public static ApiKey parse(String line, double defaultRate) {
    String[] all = line.split(":", -1);
    boolean capture = all.length >= 3 && all[all.length - 1].equals(CAPTURE);
    String[] parts = capture ? java.util.Arrays.copyOf(all, all.length - 1) : all;
    if (parts.length < 2 || parts.length > 3 || !USER.matcher(parts[0]).matches()
        || !HASH.matcher(parts[1].toLowerCase(Locale.ROOT)).matches()) {
      throw new IllegalArgumentException("expected user:sha256-hex-of-key[:requests-per-second][:capture]");
    }
    double rate = defaultRate;
    if (parts.length == 3) {
      try {
        rate = Double.parseDouble(parts[2]);
      } catch (NumberFormatException e) {
        rate = -1;
      }
      if (!(rate > 0) || Double.isInfinite(rate)) {
        throw new IllegalArgumentException("the rate must be a positive number of requests per second");
      }
    }
    return new ApiKey(parts[0], parts[1].toLowerCase(Locale.ROOT), rate, capture);
  }

  /** The line a new key gets in the keys file (the CLI's {@code keys add}). */
  public static String line(String user, String key, Double rate) {
    return line(user, key, rate, false);
  }

  /** The same, for a capturing key when {@code capture} (the CLI's {@code keys add --capture}). */
  public static String line(String user, String key, Double rate, boolean capture) {
    return user + ":" + EventTokens.sha256(key.getBytes(StandardCharsets.UTF_8)) + (rate == null ? "" : ":" + rate)
        + (capture ? ":" + CAPTURE : "");
  }

  /** The holder SIGHUP reloads; empty when no keys file is configured. */
  public Optional<Reloadable<?>> reloadable() {
    return Optional.ofNullable(reloadable);
  }

  /** The key a bearer token stands for; hashing it first keeps the lookup from comparing secrets. */
  public Optional<ApiKey> authenticate(String presented) {
    Map<String, ApiKey> keys = byHash.get();
    if (presented == null || presented.isEmpty() || keys.isEmpty()) {
      return Optional.empty();
    }
    return Optional.ofNullable(keys.get(EventTokens.sha256(presented.getBytes(StandardCharsets.UTF_8))));
  }
}
