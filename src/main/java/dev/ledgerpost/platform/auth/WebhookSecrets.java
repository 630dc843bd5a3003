package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;

/**
 * The form of a webhook endpoint's secrets and URL (docs/design.md §6.6), checked the same way in the
 * configuration and in a {@code secretFile}. A secret is the Standard Webhooks form {@code whsec_<base64>}; its
 * decoded bytes are the HMAC-SHA256 key, between 24 and 64 bytes as the specification asks.
 */
public final class WebhookSecrets {
  public static final String PREFIX = "whsec_";
  private static final int MIN_BYTES = 24;
  private static final int MAX_BYTES = 64;

  private WebhookSecrets() {}

  /** The key of one secret; the message never repeats the secret. */
  public static byte[] decode(String secret) {
    if (secret == null || !secret.startsWith(PREFIX)) {
      throw new IllegalArgumentException("expected whsec_<base64> (the Standard Webhooks form)");
    }
    byte[] key;
    try {
      key = Base64.getDecoder().decode(secret.substring(PREFIX.length()));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the part after whsec_ is not base64");
    }
    if (key.length < MIN_BYTES || key.length > MAX_BYTES) {
      throw new IllegalArgumentException("the key is " + key.length + " bytes; it must be " + MIN_BYTES + " to " + MAX_BYTES
          + " (e.g. whsec_ + base64 of 32 random bytes: openssl rand -base64 32)");
    }
    return key;
  }

  /**
   * The keys of a {@code secretFile}: one secret a line, under the credential files' rule ({@link CredentialFile});
   * blocking. {@code key} names where the file came from, for the messages.
   */
  public static List<byte[]> read(String key, Path file) {
    List<byte[]> keys = new ArrayList<>();
    for (CredentialFile.Entry<byte[]> e : CredentialFile.read(key, file, WebhookSecrets::decode)) {
      keys.add(e.value());
    }
    if (keys.isEmpty()) {
      throw new ConfigException(List.of(key + " " + file + ": holds no secret"));
    }
    return keys;
  }

  /**
   * What is wrong with an endpoint URL, or null. Only absolute http or https URLs with a host; no user
   * information (a receiver authenticates the gateway by the signature, and the URL is shown by the API).
   */
  public static String urlProblem(String url) {
    if (url == null || url.isEmpty()) {
      return "is required";
    }
    URI u;
    try {
      u = new URI(url);
    } catch (URISyntaxException e) {
      return "'" + url + "' is not a URL: " + e.getMessage();
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      return "'" + url + "' must be http:// or https://";
    }
    if (u.getHost() == null || u.getHost().isEmpty()) {
      return "'" + url + "' has no host";
    }
    if (u.getRawUserInfo() != null) {
      return "must not carry credentials (receivers verify the webhook-signature instead)";
    }
    if (u.getRawFragment() != null) {
      return "'" + url + "' must not have a #fragment";
    }
    return null;
  }
}
