package dev.ledgerpost.operate.tracking;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * RFC 3461's xtext, as far as matching an ENVID needs it: the ledger keeps MAIL's ENVID as the client wrote it (xtext),
 * and a reporting MTA writes Original-Envelope-Id decoded (Postfix) or as it was; both forms are looked for.
 */
final class Xtext {
  private Xtext() {}

  /** The value as given, decoded and encoded: the forms a stored ENVID may have. */
  static String[] forms(String value) {
    Set<String> out = new LinkedHashSet<>();
    out.add(value);
    out.add(decode(value));
    out.add(encode(value));
    return out.toArray(new String[0]);
  }

  static String encode(String s) {
    StringBuilder b = new StringBuilder();
    for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
      int c = x & 0xff;
      if (c < 33 || c > 126 || c == '+' || c == '=') {
        b.append('+').append(String.format("%02X", c));
      } else {
        b.append((char) c);
      }
    }
    return b.toString();
  }

  static String decode(String s) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '+' && i + 2 < s.length() && isHex(s.charAt(i + 1)) && isHex(s.charAt(i + 2))) {
        out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        out.write(b, 0, b.length);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private static boolean isHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
  }
}
