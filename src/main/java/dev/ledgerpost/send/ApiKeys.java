package dev.ledgerpost.send;

import dev.ledgerpost.notify.EventTokens;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The send API's keys, one per line of the keys file: {@code user:<sha256 hex of the key>[:<requests per
 * second>]}. Only hashes are stored, so the file can be read by more people than the keys themselves.
 * The user is recorded as the message's auth user, as an SMTP AUTH name would be.
 */
public final class ApiKeys {
  private static final Logger LOG = LoggerFactory.getLogger(ApiKeys.class);
  private static final Pattern USER = Pattern.compile("[^\\s:]{1,128}");
  private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");

  /** {@code id} is the key's SHA-256: the scope of its idempotency keys and its rate-limit bucket. */
  public record ApiKey(String user, String id, double rate) {}

  private final Map<String, ApiKey> byHash;

  public ApiKeys(Map<String, ApiKey> byHash) {
    this.byHash = Map.copyOf(byHash);
  }

  /**
   * Reads the keys file (blocking: at start, on a worker). A malformed line stops the start: a key the
   * operator meant to grant must not silently fail every request.
   */
  public static ApiKeys load(String file, double defaultRate) throws IOException {
    Map<String, ApiKey> byHash = new HashMap<>();
    if (file == null || file.isEmpty()) {
      return new ApiKeys(byHash);
    }
    List<String> lines = Files.readAllLines(Path.of(file), StandardCharsets.UTF_8);
    List<String> bad = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] parts = line.split(":", -1);
      if (parts.length < 2 || parts.length > 3 || !USER.matcher(parts[0]).matches()
          || !HASH.matcher(parts[1].toLowerCase(Locale.ROOT)).matches()) {
        bad.add("line " + (i + 1) + ": expected user:sha256-hex-of-key[:requests-per-second]");
        continue;
      }
      double rate = defaultRate;
      if (parts.length == 3) {
        try {
          rate = Double.parseDouble(parts[2]);
        } catch (NumberFormatException e) {
          rate = -1;
        }
        if (!(rate > 0) || Double.isInfinite(rate)) {
          bad.add("line " + (i + 1) + ": the rate must be a positive number of requests per second");
          continue;
        }
      }
      String hash = parts[1].toLowerCase(Locale.ROOT);
      if (byHash.putIfAbsent(hash, new ApiKey(parts[0], hash, rate)) != null) {
        bad.add("line " + (i + 1) + ": the same key is listed twice");
      }
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException("api.keysFile " + file + ": " + String.join("; ", bad));
    }
    LOG.info("{} send API key(s) loaded from {}", byHash.size(), file);
    return new ApiKeys(byHash);
  }

  /** The key a bearer token stands for; hashing it first keeps the lookup from comparing secrets. */
  public Optional<ApiKey> authenticate(String presented) {
    if (presented == null || presented.isEmpty() || byHash.isEmpty()) {
      return Optional.empty();
    }
    return Optional.ofNullable(byHash.get(EventTokens.sha256(presented.getBytes(StandardCharsets.UTF_8))));
  }
}
