package dev.ledgerpost.notify;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who a WebSocket token belongs to: the admin token sees every event; a per-user token, stored only
 * as its SHA-256, sees the events of messages that user submitted (their SMTP AUTH name).
 */
public final class EventTokens {
  private static final Logger LOG = LoggerFactory.getLogger(EventTokens.class);

  /** {@code user} null means the administrator. */
  public record Principal(String user) {
    public boolean admin() {
      return user == null;
    }

    public String name() {
      return user == null ? "admin" : user;
    }
  }

  private final byte[] adminToken;
  private final Map<String, String> userByHash;

  public EventTokens(String adminToken, Map<String, String> userByHash) {
    this.adminToken = adminToken.getBytes(StandardCharsets.UTF_8);
    this.userByHash = Map.copyOf(userByHash);
  }

  /** Reads {@code user:sha256hex} lines (blocking: at start only). */
  public static EventTokens load(String adminToken, String tokensFile) throws IOException {
    Map<String, String> byHash = new HashMap<>();
    if (tokensFile != null && !tokensFile.isEmpty()) {
      List<String> lines = Files.readAllLines(Path.of(tokensFile), StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i).trim();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        int colon = line.indexOf(':');
        String hash = colon < 0 ? "" : line.substring(colon + 1).trim().toLowerCase(java.util.Locale.ROOT);
        if (colon <= 0 || !hash.matches("[0-9a-f]{64}")) {
          LOG.warn("{} line {}: expected user:sha256-hex; skipped", tokensFile, i + 1);
          continue;
        }
        byHash.put(hash, line.substring(0, colon));
      }
      LOG.info("{} per-user event token(s) loaded from {}", byHash.size(), tokensFile);
    }
    return new EventTokens(adminToken, byHash);
  }

  public Optional<Principal> authenticate(String token) {
    if (token == null || token.isEmpty()) {
      return Optional.empty();
    }
    byte[] presented = token.getBytes(StandardCharsets.UTF_8);
    if (MessageDigest.isEqual(presented, adminToken)) {
      return Optional.of(new Principal(null));
    }
    String user = userByHash.get(sha256(presented));
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
