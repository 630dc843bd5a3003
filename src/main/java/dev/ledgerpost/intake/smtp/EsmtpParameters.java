package dev.ledgerpost.intake.smtp;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The parameters after a MAIL or RCPT path (RFC 5321 §4.1.2 esmtp-param), all read before any is acted
 * on: each is a keyword with an optional value, and each keyword comes at most once, since with two
 * SIZE= or BODY= the gateway and its smarthost could each take a different one. Syntax errors are
 * 501 5.5.4; a well-formed parameter the gateway does not offer is 555 5.5.4.
 */
final class EsmtpParameters {
  private EsmtpParameters() {}

  /** Which of the parameters that depend on the smarthost this session's EHLO offered. */
  record Offered(boolean dsn, boolean binaryMime) {
    static final Offered NONE = new Offered(false, false);
  }

  /** What MAIL's parameters say, or the reply that refuses them (then the rest is meaningless). */
  record Mail(Reply refusal, long declaredSize, boolean eightBit, boolean smtpUtf8, boolean binaryMime, String ret,
      String envid) {
    static Mail refused(Reply reply) {
      return new Mail(reply, 0, false, false, false, null, null);
    }
  }

  /** What RCPT's parameters say (RFC 3461's NOTIFY and ORCPT, verbatim), or the reply that refuses them. */
  record Rcpt(Reply refusal, String dsnNotify, String dsnOrcpt) {
    static final Rcpt NONE = new Rcpt(null, null, null);
  }

  /** RFC 3461 §4.4: an ENVID is at most 100 characters; §4.2: an ORCPT at most 500. */
  static final int MAX_ENVID = 100;
  static final int MAX_ORCPT = 500;

  static Mail mail(List<String> words, long maxMessageSize) {
    return mail(words, maxMessageSize, Offered.NONE);
  }

  /**
   * MAIL's parameters: SIZE (RFC 1870), BODY (RFC 6152; BINARYMIME, RFC 3030, when offered), SMTPUTF8
   * (RFC 6531), AUTH (RFC 4954, advisory), and RET and ENVID (RFC 3461, when DSN was offered).
   */
  static Mail mail(List<String> words, long maxMessageSize, Offered offered) {
    Map<String, String> values = new LinkedHashMap<>();
    Reply refusal = read(words, values, (keyword, value) -> switch (keyword) {
      case "SIZE" -> {
        long size = size(value);
        yield size < 0 ? Replies.BAD_SIZE : size > maxMessageSize ? Replies.TOO_BIG : null;
      }
      case "BODY" -> value == null ? Replies.SYNTAX : body(value, offered) == null ? Replies.UNSUPPORTED_PARAMETER : null;
      case "SMTPUTF8" -> value != null ? Replies.SYNTAX : null;
      case "AUTH" -> value == null ? Replies.SYNTAX : null; // advisory: ignoring it is allowed, but it has a value
      case "RET" -> dsn(offered.dsn(), value != null && (value.equalsIgnoreCase("FULL") || value.equalsIgnoreCase("HDRS")));
      case "ENVID" -> dsn(offered.dsn(), value != null && value.length() <= MAX_ENVID && xtext(value, false));
      default -> Replies.UNSUPPORTED_PARAMETER;
    });
    if (refusal != null) {
      return Mail.refused(refusal);
    }
    String body = values.containsKey("BODY") ? body(values.get("BODY"), offered) : "7BIT";
    long declaredSize = values.containsKey("SIZE") ? size(values.get("SIZE")) : 0;
    return new Mail(null, declaredSize, body.equals("8BITMIME"), values.containsKey("SMTPUTF8"), body.equals("BINARYMIME"),
        values.get("RET"), values.get("ENVID"));
  }

  /** BODY's value in upper case, or null when the gateway does not take it (BINARYMIME only while the smarthost does). */
  private static String body(String value, Offered offered) {
    String body = value.toUpperCase(Locale.ROOT);
    return body.equals("8BITMIME") || body.equals("7BIT") || (body.equals("BINARYMIME") && offered.binaryMime()) ? body : null;
  }

  /** A DSN parameter (RFC 3461): 555 unless DSN was offered, then 501 5.5.4 unless it is well-formed. */
  private static Reply dsn(boolean offered, boolean valid) {
    return !offered ? Replies.UNSUPPORTED_PARAMETER : valid ? null : Replies.BAD_DSN_PARAMETER;
  }

  /** RCPT's parameters without DSN offered: any well-formed one is 555; null when there are none. */
  static Reply rcpt(List<String> words) {
    return rcpt(words, false, false).refusal();
  }

  /**
   * RCPT's parameters: NOTIFY and ORCPT (RFC 3461) when DSN was offered, validated and kept verbatim;
   * anything else is 555. {@code smtpUtf8}: the transaction's MAIL said SMTPUTF8, so a {@code utf-8} ORCPT
   * may carry UTF-8 as it is (RFC 6533 §3).
   */
  static Rcpt rcpt(List<String> words, boolean dsnOffered, boolean smtpUtf8) {
    Map<String, String> values = new LinkedHashMap<>();
    Reply refusal = read(words, values, (keyword, value) -> switch (keyword) {
      case "NOTIFY" -> dsn(dsnOffered, notify(value));
      case "ORCPT" -> dsn(dsnOffered, orcpt(value, smtpUtf8));
      default -> Replies.UNSUPPORTED_PARAMETER;
    });
    if (refusal != null) {
      return new Rcpt(refusal, null, null);
    }
    return values.isEmpty() ? Rcpt.NONE : new Rcpt(null, values.get("NOTIFY"), values.get("ORCPT"));
  }

  /** RFC 3461 §4.1: "NEVER", or one or more of SUCCESS, FAILURE, DELAY, comma-separated, each at most once. */
  static boolean notify(String value) {
    if (value == null || value.isEmpty()) {
      return false;
    }
    String[] words = value.toUpperCase(Locale.ROOT).split(",", -1);
    if (words.length == 1 && words[0].equals("NEVER")) {
      return true;
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (String w : words) {
      if (!(w.equals("SUCCESS") || w.equals("FAILURE") || w.equals("DELAY")) || !seen.add(w)) {
        return false;
      }
    }
    return true;
  }

  /**
   * RFC 3461 §4.2: {@code addr-type ";" xtext}, at most 500 characters. The addr-type is an atom (rfc822,
   * utf-8...); UTF-8 as it is only in a {@code utf-8} address of an SMTPUTF8 transaction (RFC 6533 §3).
   */
  static boolean orcpt(String value, boolean smtpUtf8) {
    if (value == null || value.length() > MAX_ORCPT) {
      return false;
    }
    int semi = value.indexOf(';');
    if (semi <= 0 || semi == value.length() - 1) {
      return false;
    }
    String type = value.substring(0, semi);
    for (int i = 0; i < type.length(); i++) {
      char c = type.charAt(i);
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
        return false;
      }
    }
    return xtext(value.substring(semi + 1), smtpUtf8 && type.equalsIgnoreCase("utf-8"));
  }

  /**
   * RFC 3461 §4: xtext is printable US-ASCII but "+" and "=", and "+" followed by two upper-case hex
   * digits for any other octet. {@code utf8}: characters beyond ASCII are allowed as they are too.
   */
  static boolean xtext(String value, boolean utf8) {
    if (value.isEmpty()) {
      return false;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '+') {
        if (i + 2 >= value.length() || !upperHex(value.charAt(i + 1)) || !upperHex(value.charAt(i + 2))) {
          return false;
        }
        i += 2;
      } else if (c >= 0x80) {
        if (!utf8) {
          return false;
        }
      } else if (c < '!' || c > '~' || c == '=') {
        return false;
      }
    }
    return true;
  }

  private static boolean upperHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  }

  /**
   * Fills keyword (upper case) to value (null when none), then hands each in turn to {@code check}: the 501 reply
   * when one is malformed or repeated (before any is acted on), else the first refusal {@code check} gives, or null.
   */
  private static Reply read(List<String> words, Map<String, String> into, BiFunction<String, String, Reply> check) {
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
    for (Map.Entry<String, String> p : into.entrySet()) {
      Reply refusal = check.apply(p.getKey(), p.getValue());
      if (refusal != null) {
        return refusal;
      }
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
