package dev.ledgerpost.operate.erasure;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * One address to erase (docs/design.md §8.6): the keyed hash that replaces it, and the PostgreSQL regular expression
 * (ARE, matched case-insensitively) that finds it inside any text. It finds the address as written, as JSON holds it
 * at any depth (a quoted local part's quotes and backslashes escaped once in a JSON string, twice in a JSON string
 * inside a JSON string such as a stored send answer's body, and so on) and as an ORCPT's xtext holds it ({@code +2B}
 * for a plus, and {@code +40} for an '@' where a client chose to); and
 * only the whole address: {@code a@example.com} is not found inside {@code ba@example.com} or
 * {@code a@example.community}, but is inside {@code <a@example.com>}, {@code "a@example.com"} and
 * {@code rfc822;a@example.com}.
 */
public record ErasedAddress(String hash, String pattern) {
  /** What may stand before a local part: atext and the dot. Anything else (<, ", ;, :, a space) ends it. */
  private static final String NOT_AFTER_LOCAL = "(?<![[:alnum:]!#$%&'*+/=?^_`{|}~.-])";
  /**
   * Before a quoted local part, a backslash too: the match takes the whole run of escaping backslashes before its
   * opening quote, so that it never starts inside one and leaves half an escape behind (JSON that no longer reads).
   */
  private static final String NOT_AFTER_QUOTED_LOCAL = "(?<![[:alnum:]!#$%&'*+/=?^_`{|}~.\\\\-])";
  /** What may continue a domain: a letter, digit or hyphen, or a dot followed by one (a final dot ends a sentence). */
  private static final String NOT_BEFORE_DOMAIN = "(?![[:alnum:]-]|\\.[[:alnum:]-])";

  public static ErasedAddress of(byte[] key, String address) {
    Set<String> forms = new LinkedHashSet<>();
    forms.add(escapedAtAnyDepth(address));
    forms.add(xtext(address));
    String any = String.join("|", forms);
    String notAfter = address.startsWith("\"") ? NOT_AFTER_QUOTED_LOCAL : NOT_AFTER_LOCAL;
    return new ErasedAddress(hash(key, address), notAfter + "(?:" + any + ")" + NOT_BEFORE_DOMAIN);
  }

  /** {@code erased:} and the HMAC-SHA256 (hex) of the lower-cased address: the same for every spelling of it. */
  static String hash(byte[] key, String address) {
    return "erased:" + HexFormat.of().formatHex(hmac(key, address.toLowerCase(Locale.ROOT)));
  }

  /**
   * Names the key without revealing it, so that an auditor can tell which key an erasure's hash was made under
   * (several nodes with different generated keys, a rotated key).
   */
  public static String keyId(byte[] key) {
    return HexFormat.of().formatHex(hmac(key, "ledgerpost erasure key id")).substring(0, 16);
  }

  private static byte[] hmac(byte[] key, String text) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is part of every Java runtime", e);
    }
  }

  /** The text matched literally: in an ARE a backslash before anything but a letter or digit is that character. */
  static String literal(String s) {
    StringBuilder out = new StringBuilder();
    s.codePoints().forEach(c -> {
      if (!Character.isLetterOrDigit(c)) {
        out.append('\\');
      }
      out.appendCodePoint(c);
    });
    return out.toString();
  }

  /**
   * The text matched literally, except the two characters JSON escapes in an address: n levels of JSON strings put
   * 2^n - 1 backslashes before a quote and turn a backslash into 2^n. So a quote may follow any run of backslashes,
   * and a backslash is one or more: the address as written (no backslash added), as a JSON string holds it, and as
   * a JSON string inside a JSON string holds it (a stored send answer, docs/design.md §7.3), at any depth. Every other
   * character of a valid address stands for itself in JSON (control characters are not valid; Vert.x and PostgreSQL
   * leave non-ASCII unescaped).
   */
  static String escapedAtAnyDepth(String s) {
    StringBuilder out = new StringBuilder();
    s.codePoints().forEach(c -> out.append(anyDepth(c)));
    return out.toString();
  }

  private static String anyDepth(int c) {
    return switch (c) {
      case '"' -> "\\\\*\"";
      case '\\' -> "\\\\+";
      default -> literal(new String(Character.toChars(c)));
    };
  }

  /**
   * RFC 3461 xtext, as any client may have written it: '+', '=' and bytes outside 33..126 must be +XX (a UTF-8
   * address byte by byte), and any other character may be (bob+40example.net is bob@example.net).
   */
  static String xtext(String address) {
    StringBuilder out = new StringBuilder();
    for (byte b : address.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      String hex = "\\+" + String.format("%02X", c);
      if (c < 33 || c > 126 || c == '+' || c == '=') {
        out.append(hex);
      } else {
        out.append("(?:").append(anyDepth(c)).append('|').append(hex).append(')');
      }
    }
    return out.toString();
  }
}
