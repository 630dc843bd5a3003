package dev.ledgerpost.publish.webhook;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Base64;
import java.util.List;
import java.util.function.Supplier;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The {@code webhook-signature} of the Standard Webhooks specification: {@code v1,} + base64 of HMAC-SHA256 over
 * {@code <webhook-id>.<webhook-timestamp>.<body>}, keyed with the bytes of the secret after {@code whsec_}. Every
 * secret the endpoint lists signs, space-separated, so a receiver can rotate keys without missing a request.
 * The keys are read through their holder each time (a {@code secretFile} is reloaded on SIGHUP).
 */
final class Signer {
  private static final String HMAC = "HmacSHA256";

  private final Supplier<List<byte[]>> keys;

  Signer(Supplier<List<byte[]>> keys) {
    this.keys = keys;
  }

  /** How many secrets sign now (the API shows this, never the secrets). */
  int secrets() {
    return keys.get().size();
  }

  String sign(String id, long timestamp, String body) {
    byte[] content = (id + "." + timestamp + "." + body).getBytes(StandardCharsets.UTF_8);
    StringBuilder header = new StringBuilder();
    for (byte[] key : keys.get()) {
      if (header.length() > 0) {
        header.append(' ');
      }
      header.append("v1,").append(Base64.getEncoder().encodeToString(hmac(key, content)));
    }
    return header.toString();
  }

  private static byte[] hmac(byte[] key, byte[] content) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac.doFinal(content);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is part of every Java runtime", e);
    }
  }
}
