package dev.ledgerpost.intake.http;

import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The request hash an Idempotency-Key is checked against: SHA-256 of the body with object members
 * sorted and no insignificant whitespace, so a client that re-serialises the same request matches.
 */
public final class CanonicalJson {
  private CanonicalJson() {}

  public static String sha256(JsonObject body) {
    try {
      byte[] canonical = Json.encode(canonical(body)).getBytes(StandardCharsets.UTF_8);
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(canonical));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static Object canonical(Object value) {
    if (value instanceof JsonObject o) {
      Map<String, Object> sorted = new TreeMap<>();
      o.forEach(e -> sorted.put(e.getKey(), canonical(e.getValue())));
      return sorted;
    }
    if (value instanceof JsonArray a) {
      List<Object> items = new ArrayList<>(a.size());
      a.forEach(v -> items.add(canonical(v)));
      return items;
    }
    return value;
  }
}
