package dev.ledgerpost.intake.smtp.auth;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * What a {@link SaslMechanism} answers to a line: another challenge, the credentials to check, the client's
 * cancel, or a response it cannot read. Consumers go through {@link #accept(Visitor)}, as for every sealed type
 * in this code base: a new answer is a compile error wherever it is not handled.
 */
public sealed interface SaslAnswer {

  /** One method per answer; implement all of them, there is no default. */
  interface Visitor<R> {
    R challenge(Challenge c);

    R credentials(Credentials c);

    R cancelled(Cancelled c);

    R malformed(Malformed m);
  }

  <R> R accept(Visitor<R> visitor);

  /** Send {@code 334 <text>} and wait for the next line; {@code text} is already base64 (or empty). */
  record Challenge(String text) implements SaslAnswer {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.challenge(this);
    }
  }

  /**
   * The exchange is complete. {@code authorizationId} is the identity the client asks to act as (SASL's authzid):
   * empty when it did not ask; acting as another identity than its own is not supported.
   */
  record Credentials(String authorizationId, String user, String password) implements SaslAnswer {
    /** The client asked to act as someone else: refused as a failed authentication, without checking the password. */
    public boolean actsAsAnother() {
      return !authorizationId.isEmpty() && !authorizationId.equals(user);
    }

    @Override
    public <R> R accept(Visitor<R> v) {
      return v.credentials(this);
    }
  }

  /** The client answered a challenge with {@code *}. */
  record Cancelled() implements SaslAnswer {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.cancelled(this);
    }
  }

  /** A response that is not base64, or does not decode to what the mechanism expects. */
  record Malformed() implements SaslAnswer {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.malformed(this);
    }
  }

  /** A base64 response as UTF-8 text; null when it is not base64. */
  static String decode(String base64) {
    try {
      return new String(Base64.getDecoder().decode(base64.trim()), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
