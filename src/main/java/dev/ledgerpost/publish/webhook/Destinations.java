package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.auth.WebhookSecrets;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.util.Locale;

/**
 * Where an endpoint made through the API may point (docs/design.md §6.6): a client that can name any URL could
 * otherwise have the gateway POST into the network it runs in (SSRF). The rules are checked when the endpoint is made
 * or changed, on the URL's literal address or every address its name resolves to, and again on every connection
 * after DNS ({@link Sender}), so a name that resolves inside later is refused too. Endpoints of the configuration
 * file are the operator's and are not checked.
 */
record Destinations(boolean allowHttp, boolean allowPrivateNetworks) {

  /** What is wrong with the URL itself (its form, its scheme), or null. */
  String urlProblem(String url) {
    String problem = WebhookSecrets.urlProblem(url);
    if (problem != null) {
      return "url " + problem;
    }
    String scheme = URI.create(url).getScheme().toLowerCase(Locale.ROOT);
    if (!allowHttp && !scheme.equals("https")) {
      return "url '" + url + "' must be https:// (http:// only with webhooks.allowHttp: true)";
    }
    return null;
  }

  /** Why the gateway must not connect to {@code a}, or null when it may. */
  String addressProblem(String host, InetAddress a) {
    if (allowPrivateNetworks) {
      return null;
    }
    String kind = kind(a);
    return kind == null ? null
        : "'" + host + "' is " + (host.equals(a.getHostAddress()) ? "" : "resolved to " + a.getHostAddress() + ", ") + (kind.startsWith("u") ? "an " : "a ") + kind
            + " address: refused (webhooks.allowPrivateNetworks is false)";
  }

  /** The kind of address a webhook may not reach unless private networks are allowed, or null for a public one. */
  static String kind(InetAddress a) {
    if (a.isAnyLocalAddress()) {
      return "unspecified";
    }
    if (a.isLoopbackAddress()) {
      return "loopback";
    }
    if (a.isLinkLocalAddress()) {
      return "link-local";
    }
    if (a.isMulticastAddress()) {
      return "multicast";
    }
    if (a instanceof Inet4Address) {
      byte[] b = a.getAddress();
      int first = b[0] & 0xff;
      int second = b[1] & 0xff;
      if (first == 10 || (first == 172 && second >= 16 && second <= 31) || (first == 192 && second == 168)) {
        return "private (RFC 1918)";
      }
      if (first == 0) {
        return "unspecified"; // 0.0.0.0/8: "this network", connects to this host on some systems
      }
      if (first == 100 && second >= 64 && second <= 127) {
        return "private (shared, RFC 6598)";
      }
      return null;
    }
    if (a instanceof Inet6Address) {
      byte[] b = a.getAddress();
      if ((b[0] & 0xfe) == 0xfc) {
        return "private (unique local, fc00::/7)";
      }
      if (isMappedV4(b)) {
        try {
          return kind(InetAddress.getByAddress(new byte[] {b[12], b[13], b[14], b[15]}));
        } catch (java.net.UnknownHostException e) {
          return "unreadable";
        }
      }
    }
    return null;
  }

  /** ::ffff:a.b.c.d: an IPv4 address in IPv6 form reaches that IPv4 address. */
  private static boolean isMappedV4(byte[] b) {
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        return false;
      }
    }
    return (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
  }
}
