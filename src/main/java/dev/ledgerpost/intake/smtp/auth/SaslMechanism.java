package dev.ledgerpost.intake.smtp.auth;

import java.util.Locale;

/**
 * The server side of one SASL mechanism, for one AUTH exchange (RFC 4954): it starts with the initial
 * response AUTH carried, if any, then takes the client's continuation lines until it answers anything but a
 * {@link SaslAnswer.Challenge}. It knows no SMTP replies and checks no password: the session maps its answers
 * to replies and hands the credentials to the authenticator. One instance per exchange (a mechanism may
 * remember what it was told, as LOGIN remembers the user name).
 */
public interface SaslMechanism {
  /** What EHLO's AUTH line offers, in this order. */
  String OFFERED = "PLAIN LOGIN";

  /** @param initialResponse the base64 after the mechanism's name on the AUTH line; null when there was none */
  SaslAnswer start(String initialResponse);

  /** @param line the client's answer to the last challenge, trimmed; {@code *} cancels (RFC 4954 §4) */
  SaslAnswer next(String line);

  /** A fresh exchange of the mechanism named (in any case), or null when it is not one of {@link #OFFERED}. */
  static SaslMechanism named(String name) {
    return switch (name.toUpperCase(Locale.ROOT)) {
      case "PLAIN" -> new PlainMechanism();
      case "LOGIN" -> new LoginMechanism();
      default -> null;
    };
  }
}
