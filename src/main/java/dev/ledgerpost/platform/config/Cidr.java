package dev.ledgerpost.platform.config;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/** One network in CIDR notation ({@code 10.0.0.0/8}, {@code ::1/128}); a bare address is a host route. */
public record Cidr(byte[] network, int prefix, String text) {
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:][0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

  public static Cidr parse(String text) {
    String t = text.trim();
    int slash = t.indexOf('/');
    String addr = slash < 0 ? t : t.substring(0, slash);
    byte[] bytes = literal(addr);
    if (bytes == null) {
      throw new IllegalArgumentException("'" + text + "' is not an IP network in CIDR notation");
    }
    int max = bytes.length * 8;
    int prefix;
    try {
      prefix = slash < 0 ? max : Integer.parseInt(t.substring(slash + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' has a malformed prefix length");
    }
    if (prefix < 0 || prefix > max) {
      throw new IllegalArgumentException("'" + text + "' has a prefix length outside 0.." + max);
    }
    return new Cidr(bytes, prefix, t);
  }

  /** True when the address (a literal, as a socket reports it) lies inside this network. */
  public boolean contains(String address) {
    byte[] a = address == null ? null : literal(stripScope(address));
    if (a == null) {
      return false;
    }
    if (a.length != network.length) {
      a = ipv4MappedToIpv4(a);
      if (a == null || a.length != network.length) {
        return false;
      }
    }
    int full = prefix / 8;
    for (int i = 0; i < full; i++) {
      if (a[i] != network[i]) {
        return false;
      }
    }
    int rest = prefix % 8;
    if (rest == 0) {
      return true;
    }
    int mask = (0xFF << (8 - rest)) & 0xFF;
    return (a[full] & mask) == (network[full] & mask);
  }

  /**
   * The bytes of an IP literal, or null. Only dotted quads and IPv6 forms reach InetAddress: it would
   * look any other text up in DNS ("cafe.de"), read "" as loopback, and short forms the inet_aton
   * way ("10.1" is 10.0.0.1, not the 10.1.0.0 an operator means).
   */
  static byte[] literal(String addr) {
    byte[] quad = dottedQuad(addr);
    if (quad != null) {
      return quad;
    }
    if (!IPV6.matcher(addr).matches()) {
      return null;
    }
    try {
      return InetAddress.getByName(addr).getAddress();
    } catch (UnknownHostException | IllegalArgumentException e) {
      return null;
    }
  }

  /**
   * The bytes of a dotted quad (four decimal octets of ASCII digits, 0..255, no leading zero), or null. Read by hand
   * (it was a regex, then InetAddress's parse): a client's address is checked against the configured networks on every connection, and a regex match and
   * InetAddress's own parse for it were most of that check's cost (issue 33).
   */
  static byte[] dottedQuad(String s) {
    byte[] out = new byte[4];
    int i = 0;
    for (int part = 0; part < 4; part++) {
      if (part > 0) {
        if (i >= s.length() || s.charAt(i) != '.') {
          return null;
        }
        i++;
      }
      int start = i;
      int value = 0;
      while (i < s.length() && i - start < 3 && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        value = value * 10 + (s.charAt(i) - '0');
        i++;
      }
      int digits = i - start;
      if (digits == 0 || (digits > 1 && s.charAt(start) == '0') || value > 255) {
        return null;
      }
      out[part] = (byte) value;
    }
    return i == s.length() ? out : null;
  }

  private static String stripScope(String address) {
    int pct = address.indexOf('%');
    return pct < 0 ? address : address.substring(0, pct);
  }

  private static byte[] ipv4MappedToIpv4(byte[] a) {
    if (a.length != 16) {
      return null;
    }
    for (int i = 0; i < 10; i++) {
      if (a[i] != 0) {
        return null;
      }
    }
    if (a[10] != (byte) 0xFF || a[11] != (byte) 0xFF) {
      return null;
    }
    return new byte[] {a[12], a[13], a[14], a[15]};
  }

  @Override
  public String toString() {
    return text;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Cidr c && c.text.equals(text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }
}
