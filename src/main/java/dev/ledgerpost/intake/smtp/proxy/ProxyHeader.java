package dev.ledgerpost.intake.smtp.proxy;

import dev.ledgerpost.platform.config.GatewayConfig.ProxyProtocol;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.regex.Pattern;

/**
 * The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) that a proxy in front of the
 * SMTP listener sends before any byte of the client's: the real client's address. Pure: bytes go in as
 * they arrive (split anywhere), a verdict comes out; {@link ProxyHeaderRead} ties it to a socket.
 *
 * <p>Bounded: a v1 header is one line of at most 107 bytes with its CRLF (the spec's limit); a v2 header
 * is 16 bytes plus a body of at most {@link #V2_MAX_BODY} bytes (its addresses, 12 or 36 bytes, and TLVs,
 * which are skipped). Anything else, or anything not exactly as the spec says, is malformed: nothing in a
 * doubtful header is used.
 */
public final class ProxyHeader {
  /** The longest v1 line, "PROXY TCP6 " + two full IPv6 addresses + two ports + CRLF. */
  static final int V1_MAX = 107;
  /**
   * The longest v2 body accepted. The addresses need at most 36 bytes (216 for AF_UNIX, which is refused);
   * the rest is TLVs (ALPN, authority, unique id, SSL details), a few hundred bytes at most from HAProxy.
   */
  static final int V2_MAX_BODY = 1024;

  private static final byte[] V1_PREFIX = "PROXY ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] V2_SIGNATURE = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
  private static final int V2_FIXED = 16;

  private static final String OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  private static final Pattern IPV4 = Pattern.compile("(?:" + OCTET + "\\.){3}" + OCTET);
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");
  private static final Pattern PORT = Pattern.compile("0|[1-9]\\d{0,4}");

  /**
   * What a complete header says. {@code clientAddress} is null when the proxy speaks for itself (v2
   * LOCAL, as in a health check; v1 UNKNOWN; v2 AF_UNSPEC): then the connection's own address stands.
   */
  public record Header(int version, String clientAddress, int clientPort) {}

  enum Status { NEED_MORE, DONE, MALFORMED }

  /** Whether the first bytes of a stream are a PROXY header (of either version), as far as they tell. */
  public enum Sniff { HEADER, NOT_HEADER, UNDECIDED }

  /** {@code smtp.proxyProtocol}: the versions taken. */
  private final ProxyProtocol versions;
  private byte[] seen = new byte[0];
  private Status status = Status.NEED_MORE;
  private Header header;
  private int headerLength;
  private String error;

  ProxyHeader(ProxyProtocol versions) {
    if (versions == ProxyProtocol.NONE) {
      throw new IllegalArgumentException("no PROXY header is read when smtp.proxyProtocol is none");
    }
    this.versions = versions;
  }

  /**
   * Takes the next bytes of the stream. Once DONE, {@link #header()} and {@link #rest()} (the bytes after
   * the header, the client's own); once MALFORMED, {@link #error()}. Bytes fed after either are ignored.
   */
  Status feed(byte[] bytes, int offset, int length) {
    if (status != Status.NEED_MORE) {
      return status;
    }
    // Kept until the header ends: at most the longest header plus one read's bytes, as an incomplete
    // header longer than the longest one is refused below.
    byte[] all = Arrays.copyOf(seen, seen.length + length);
    System.arraycopy(bytes, offset, all, seen.length, length);
    seen = all;
    try {
      status = parse();
    } catch (Malformed e) {
      error = e.getMessage();
      status = Status.MALFORMED;
    }
    return status;
  }

  Status feed(byte[] bytes) {
    return feed(bytes, 0, bytes.length);
  }

  Header header() {
    return header;
  }

  /** The bytes that followed the header in what was fed (empty when none). */
  byte[] rest() {
    return status == Status.DONE ? Arrays.copyOfRange(seen, headerLength, seen.length) : new byte[0];
  }

  String error() {
    return error;
  }

  /** For a peer that may not send a header: does its stream start like one? */
  public static Sniff sniff(byte[] first, int length) {
    Sniff v1 = prefixOf(first, length, V1_PREFIX);
    return v1 != Sniff.NOT_HEADER ? v1 : prefixOf(first, length, V2_SIGNATURE);
  }

  private static Sniff prefixOf(byte[] first, int length, byte[] prefix) {
    int n = Math.min(length, prefix.length);
    for (int i = 0; i < n; i++) {
      if (first[i] != prefix[i]) {
        return Sniff.NOT_HEADER;
      }
    }
    return n == prefix.length ? Sniff.HEADER : Sniff.UNDECIDED;
  }

  private Status parse() throws Malformed {
    int n = seen.length;
    if (n == 0) {
      return Status.NEED_MORE;
    }
    int version = seen[0] == 'P' ? 1 : seen[0] == 0x0D ? 2 : 0;
    byte[] prefix = version == 1 ? V1_PREFIX : V2_SIGNATURE;
    if (version == 0 || prefixOf(seen, n, prefix) == Sniff.NOT_HEADER) {
      throw new Malformed("no PROXY header (the stream starts with something else)");
    }
    if (versions != ProxyProtocol.ANY && versions != (version == 1 ? ProxyProtocol.V1 : ProxyProtocol.V2)) {
      throw new Malformed("a PROXY v" + version + " header, but smtp.proxyProtocol takes " + versions.name().toLowerCase());
    }
    if (n < prefix.length) {
      return Status.NEED_MORE;
    }
    return version == 1 ? parseV1() : parseV2();
  }

  private Status parseV1() throws Malformed {
    int limit = Math.min(seen.length, V1_MAX);
    int lf = -1;
    for (int i = 0; i < limit; i++) {
      byte b = seen[i];
      if (b == '\n') {
        lf = i;
        break;
      }
      if (b == '\r' && i + 1 < seen.length && seen[i + 1] != '\n') {
        throw new Malformed("v1 header: a CR not followed by LF");
      }
      if ((b < 0x20 || b > 0x7E) && b != '\r') {
        throw new Malformed("v1 header: a byte outside printable ASCII");
      }
    }
    if (lf < 0) {
      if (seen.length >= V1_MAX) {
        throw new Malformed("v1 header: no CRLF within " + V1_MAX + " bytes");
      }
      return Status.NEED_MORE;
    }
    if (seen[lf - 1] != '\r') {
      throw new Malformed("v1 header: the line ends in a bare LF");
    }
    String line = new String(seen, 0, lf - 1, StandardCharsets.US_ASCII);
    String[] f = line.split(" ", -1);
    Header h;
    if (f.length >= 2 && f[1].equals("UNKNOWN")) {
      h = new Header(1, null, 0); // the spec: whatever follows UNKNOWN is ignored
    } else if (f.length >= 2 && (f[1].equals("TCP4") || f[1].equals("TCP6"))) {
      if (f.length != 6) {
        throw new Malformed("v1 header: " + f[1] + " needs exactly four fields after it, separated by single spaces");
      }
      boolean six = f[1].equals("TCP6");
      String source = v1Address(f[2], six);
      v1Address(f[3], six);
      int sourcePort = v1Port(f[4]);
      v1Port(f[5]);
      h = new Header(1, source, sourcePort);
    } else {
      throw new Malformed("v1 header: protocol must be TCP4, TCP6 or UNKNOWN");
    }
    return done(h, lf + 1);
  }

  private static String v1Address(String text, boolean six) throws Malformed {
    boolean ok = six ? IPV6.matcher(text).matches() : IPV4.matcher(text).matches();
    if (!ok) {
      throw new Malformed("v1 header: '" + text + "' is not an " + (six ? "IPv6" : "IPv4") + " address");
    }
    try {
      // Only literals reach InetAddress (checked above), so it never looks anything up.
      return InetAddress.getByName(text).getHostAddress();
    } catch (UnknownHostException | IllegalArgumentException e) {
      throw new Malformed("v1 header: '" + text + "' is not an IPv6 address");
    }
  }

  private static int v1Port(String text) throws Malformed {
    if (!PORT.matcher(text).matches() || Integer.parseInt(text) > 65535) {
      throw new Malformed("v1 header: '" + text + "' is not a port");
    }
    return Integer.parseInt(text);
  }

  private Status parseV2() throws Malformed {
    if (seen.length < V2_FIXED) {
      return Status.NEED_MORE;
    }
    int versionCommand = seen[12] & 0xFF;
    if (versionCommand >> 4 != 2) {
      throw new Malformed("v2 header: version " + (versionCommand >> 4) + ", not 2");
    }
    int command = versionCommand & 0x0F;
    if (command > 1) {
      throw new Malformed("v2 header: command " + command + " is neither LOCAL nor PROXY");
    }
    int familyTransport = seen[13] & 0xFF;
    int bodyLength = ((seen[14] & 0xFF) << 8) | (seen[15] & 0xFF);
    if (bodyLength > V2_MAX_BODY) {
      throw new Malformed("v2 header: " + bodyLength + " bytes after the fixed part, more than " + V2_MAX_BODY);
    }
    if (seen.length < V2_FIXED + bodyLength) {
      return Status.NEED_MORE;
    }
    int end = V2_FIXED + bodyLength;
    if (command == 0) {
      return done(new Header(2, null, 0), end); // LOCAL: the proxy's own connection; the block is ignored
    }
    return switch (familyTransport) {
      case 0x00 -> done(new Header(2, null, 0), end); // AF_UNSPEC: nothing said about the client
      case 0x11 -> done(v2Address(4, bodyLength), end); // TCP over IPv4
      case 0x21 -> done(v2Address(16, bodyLength), end); // TCP over IPv6
      default -> throw new Malformed(String.format("v2 header: family/transport 0x%02X is not TCP over IPv4 or IPv6",
          familyTransport));
    };
  }

  private Header v2Address(int size, int bodyLength) throws Malformed {
    int needed = 2 * size + 4;
    if (bodyLength < needed) {
      throw new Malformed("v2 header: " + bodyLength + " bytes cannot hold the " + needed + " of the addresses");
    }
    byte[] source = Arrays.copyOfRange(seen, V2_FIXED, V2_FIXED + size);
    int portAt = V2_FIXED + 2 * size;
    int port = ((seen[portAt] & 0xFF) << 8) | (seen[portAt + 1] & 0xFF);
    try {
      return new Header(2, InetAddress.getByAddress(source).getHostAddress(), port);
    } catch (UnknownHostException e) {
      throw new AssertionError("4 or 16 bytes are always an address", e);
    }
  }

  private Status done(Header h, int length) {
    header = h;
    headerLength = length;
    return Status.DONE;
  }

  private static final class Malformed extends Exception {
    Malformed(String message) {
      super(message, null, false, false);
    }
  }
}
