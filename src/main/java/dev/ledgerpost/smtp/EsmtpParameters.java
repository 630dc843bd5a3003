package dev.ledgerpost.smtp;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The parameters after a MAIL or RCPT path (RFC 5321 §4.1.2 esmtp-param), all read before any is acted
 * on: each is a keyword with an optional value, and each keyword comes at most once, since with two
 * SIZE= or BODY= the gateway and its smarthost could each take a different one. Syntax errors are
 * 501 5.5.4; a well-formed parameter the gateway does not offer is 555 5.5.4.
 */
final class EsmtpParameters {
  private EsmtpParameters() {}

  /** What MAIL's parameters say, or the reply that refuses them (then the rest is meaningless). */
  record Mail(Reply refusal, long declaredSize, boolean eightBit, boolean smtpUtf8) {
    static Mail refused(Reply reply) {
      return new Mail(reply, 0, false, false);
    }
  }

  /** MAIL's parameters: SIZE (RFC 1870), BODY (RFC 6152), SMTPUTF8 (RFC 6531) and AUTH (RFC 4954, advisory). */
  static Mail mail(List<String> words, long maxMessageSize) {
    Map<String, String> values = new LinkedHashMap<>();
    Reply syntax = parse(words, values);
    if (syntax != null) {
      return Mail.refused(syntax);
    }
    long declaredSize = 0;
    boolean eightBit = false;
    boolean smtpUtf8 = false;
    for (Map.Entry<String, String> p : values.entrySet()) {
      String value = p.getValue();
      switch (p.getKey()) {
        case "SIZE" -> {
          declaredSize = size(value);
          if (declaredSize < 0) {
            return Mail.refused(Replies.BAD_SIZE);
          }
          if (declaredSize > maxMessageSize) {
            return Mail.refused(Replies.TOO_BIG);
          }
        }
        case "BODY" -> {
          if (value == null) {
            return Mail.refused(Replies.SYNTAX);
          }
          String body = value.toUpperCase(Locale.ROOT);
          if (!body.equals("8BITMIME") && !body.equals("7BIT")) {
            return Mail.refused(Replies.UNSUPPORTED_PARAMETER); // BINARYMIME needs CHUNKING, not offered
          }
          eightBit = body.equals("8BITMIME");
        }
        case "SMTPUTF8" -> {
          if (value != null) {
            return Mail.refused(Replies.SYNTAX);
          }
          smtpUtf8 = true;
        }
        case "AUTH" -> { // advisory: ignoring it is allowed, but it has a value
          if (value == null) {
            return Mail.refused(Replies.SYNTAX);
          }
        }
        default -> {
          return Mail.refused(Replies.UNSUPPORTED_PARAMETER);
        }
      }
    }
    return new Mail(null, declaredSize, eightBit, smtpUtf8);
  }

  /** RCPT's parameters: none is offered (no DSN), so any well-formed one is 555; null when there are none. */
  static Reply rcpt(List<String> words) {
    Map<String, String> values = new LinkedHashMap<>();
    Reply syntax = parse(words, values);
    if (syntax != null) {
      return syntax;
    }
    return values.isEmpty() ? null : Replies.UNSUPPORTED_PARAMETER;
  }

  /** Fills keyword (upper case) to value (null when none); the 501 reply when one is malformed or repeated. */
  private static Reply parse(List<String> words, Map<String, String> into) {
    for (String word : words) {
      int eq = word.indexOf('=');
      String keyword = (eq < 0 ? word : word.substring(0, eq)).toUpperCase(Locale.ROOT);
      String value = eq < 0 ? null : word.substring(eq + 1);
      if (!keyword(keyword) || (value != null && !value(value))) {
        return Replies.SYNTAX;
      }
      if (into.containsKey(keyword)) {
        return Replies.REPEATED_PARAMETER;
      }
      into.put(keyword, value);
    }
    return null;
  }

  /** RFC 1870 size-value, 1*20DIGIT; -1 when it is not one, Long.MAX_VALUE when it is beyond a long. */
  static long size(String value) {
    if (value == null || value.isEmpty() || value.length() > 20) {
      return -1;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
    }
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      return Long.MAX_VALUE; // up to 20 digits is still a size, only far too big
    }
  }

  /** esmtp-keyword: (ALPHA / DIGIT) *(ALPHA / DIGIT / "-"). */
  private static boolean keyword(String k) {
    if (k.isEmpty() || k.charAt(0) == '-') {
      return false;
    }
    for (int i = 0; i < k.length(); i++) {
      char c = k.charAt(i);
      if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) {
        return false;
      }
    }
    return true;
  }

  /** esmtp-value: 1*(%d33-60 / %d62-126), and UTF-8 beyond ASCII (RFC 6531 §3.3). */
  private static boolean value(String v) {
    if (v.isEmpty()) {
      return false;
    }
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (!((c >= '!' && c <= '~' && c != '=') || c >= 0x80)) {
        return false;
      }
    }
    return true;
  }
}
