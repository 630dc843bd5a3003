package dev.ledgerpost.intake.smtp.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.GatewayConfig.ProxyProtocol;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The PROXY protocol header parser (HAProxy's proxy-protocol.txt): every valid form, and every broken one refused. */
class ProxyHeaderTest {
  private static final byte[] SIG = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
  private static final byte[] SMTP = "EHLO client.test\r\n".getBytes(StandardCharsets.US_ASCII);

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  /** A v2 header: version/command byte, family/transport byte, then the body (its length is written here). */
  private static byte[] v2(int versionCommand, int familyTransport, byte[] body) {
    return concat(SIG, new byte[] {(byte) versionCommand, (byte) familyTransport, (byte) (body.length >> 8), (byte) body.length},
        body);
  }

  private static byte[] inet(int a, int b, int c, int d, int port) {
    return new byte[] {(byte) a, (byte) b, (byte) c, (byte) d, (byte) 198, 51, 100, 1, (byte) (port >> 8), (byte) port, 0, 25};
  }

  private static byte[] inet6Loopback(int lastByte, int port) {
    byte[] body = new byte[36];
    body[15] = (byte) lastByte; // source ::<lastByte>
    body[31] = 1; // destination ::1
    body[32] = (byte) (port >> 8);
    body[33] = (byte) port;
    body[35] = 25;
    return body;
  }

  private static ProxyHeader parsed(ProxyProtocol mode, byte[] stream) {
    ProxyHeader p = new ProxyHeader(mode);
    assertThat(p.feed(stream)).as(p.error()).isEqualTo(ProxyHeader.Status.DONE);
    return p;
  }

  private static String refusal(ProxyProtocol mode, byte[] stream) {
    ProxyHeader p = new ProxyHeader(mode);
    assertThat(p.feed(stream)).isEqualTo(ProxyHeader.Status.MALFORMED);
    assertThat(p.header()).isNull();
    assertThat(p.rest()).isEmpty();
    return p.error();
  }

  // --- valid headers ---

  @Test
  void v1Tcp4GivesTheSourceAddressAndPortAndLeavesTheClientsBytes() {
    ProxyHeader p = parsed(ProxyProtocol.ANY, concat(ascii("PROXY TCP4 192.0.2.7 198.51.100.1 56324 25\r\n"), SMTP));
    assertThat(p.header()).isEqualTo(new ProxyHeader.Header(1, "192.0.2.7", 56324));
    assertThat(p.rest()).isEqualTo(SMTP);
  }

  @Test
  void v1Tcp6IsWrittenAsJavaWritesAnIpv6PeerAndAMappedIpv4IsIpv4() {
    assertThat(parsed(ProxyProtocol.V1, ascii("PROXY TCP6 2001:db8::7 2001:db8::1 65535 25\r\n")).header())
        .isEqualTo(new ProxyHeader.Header(1, "2001:db8:0:0:0:0:0:7", 65535));
    assertThat(parsed(ProxyProtocol.V1, ascii("PROXY TCP6 ::ffff:127.0.0.2 ::1 0 25\r\n")).header())
        .isEqualTo(new ProxyHeader.Header(1, "127.0.0.2", 0));
  }

  @Test
  void v1UnknownLeavesTheConnectionsOwnAddressWhateverFollowsIt() {
    assertThat(parsed(ProxyProtocol.V1, ascii("PROXY UNKNOWN\r\n")).header()).isEqualTo(new ProxyHeader.Header(1, null, 0));
    assertThat(parsed(ProxyProtocol.V1, ascii("PROXY UNKNOWN whatever the proxy likes 1 2\r\n")).header().clientAddress())
        .isNull();
  }

  @Test
  void aV1LineOfExactly107BytesIsTakenAndOf108IsNot() {
    String longest = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assertThat(longest).hasSize(107); // the spec's worst case
    assertThat(parsed(ProxyProtocol.V1, ascii(longest)).rest()).isEmpty();
    assertThat(refusal(ProxyProtocol.V1, ascii(longest.replace("UNKNOWN ", "UNKNOWN  ")))).contains("107");
  }

  @Test
  void v2ProxyOverIpv4AndIpv6() {
    ProxyHeader p = parsed(ProxyProtocol.V2, concat(v2(0x21, 0x11, inet(127, 0, 0, 2, 40001)), SMTP));
    assertThat(p.header()).isEqualTo(new ProxyHeader.Header(2, "127.0.0.2", 40001));
    assertThat(p.rest()).isEqualTo(SMTP);
    assertThat(parsed(ProxyProtocol.V2, v2(0x21, 0x21, inet6Loopback(7, 443))).header())
        .isEqualTo(new ProxyHeader.Header(2, "0:0:0:0:0:0:0:7", 443));
  }

  @Test
  void v2LocalAndUnspecLeaveTheConnectionsOwnAddress() {
    assertThat(parsed(ProxyProtocol.V2, v2(0x20, 0x00, new byte[0])).header()).isEqualTo(new ProxyHeader.Header(2, null, 0));
    // LOCAL: the address block is ignored whatever it holds (a health check of the proxy's own).
    assertThat(parsed(ProxyProtocol.V2, v2(0x20, 0x11, inet(10, 0, 0, 1, 1))).header().clientAddress()).isNull();
    assertThat(parsed(ProxyProtocol.V2, v2(0x20, 0x31, new byte[3])).header().clientAddress()).isNull();
    assertThat(parsed(ProxyProtocol.V2, v2(0x21, 0x00, new byte[0])).header().clientAddress()).isNull();
  }

  @Test
  void v2TlvsAreSkippedUpToTheLongestBodyTaken() {
    byte[] tlv = {0x04, 0x00, 0x03, 'a', 'b', 'c'}; // PP2_TYPE_NOOP
    ProxyHeader p = parsed(ProxyProtocol.V2, concat(v2(0x21, 0x11, concat(inet(192, 0, 2, 9, 5), tlv)), SMTP));
    assertThat(p.header().clientAddress()).isEqualTo("192.0.2.9");
    assertThat(p.rest()).isEqualTo(SMTP);

    byte[] longest = concat(inet(192, 0, 2, 9, 5), new byte[ProxyHeader.V2_MAX_BODY - 12]);
    assertThat(parsed(ProxyProtocol.V2, v2(0x21, 0x11, longest)).header().clientAddress()).isEqualTo("192.0.2.9");
    assertThat(refusal(ProxyProtocol.V2, v2(0x21, 0x11, concat(longest, new byte[1])))).contains("more than 1024");
  }

  @Test
  void anyTakesBothVersionsEachModeRefusesTheOther() {
    byte[] one = ascii("PROXY TCP4 192.0.2.7 198.51.100.1 1 25\r\n");
    byte[] two = v2(0x21, 0x11, inet(192, 0, 2, 7, 1));
    assertThat(parsed(ProxyProtocol.ANY, one).header().version()).isEqualTo(1);
    assertThat(parsed(ProxyProtocol.ANY, two).header().version()).isEqualTo(2);
    assertThat(refusal(ProxyProtocol.V2, one)).contains("v1 header, but smtp.proxyProtocol takes v2");
    assertThat(refusal(ProxyProtocol.V1, two)).contains("v2 header, but smtp.proxyProtocol takes v1");
  }

  @Test
  void noneIsNotAModeAParserIsMadeFor() {
    assertThatThrownBy(() -> new ProxyHeader(ProxyProtocol.NONE)).isInstanceOf(IllegalArgumentException.class);
  }

  // --- split across reads ---

  static Stream<Arguments> validStreams() {
    return Stream.of(
        Arguments.of("v1 TCP4", concat(ascii("PROXY TCP4 192.0.2.7 198.51.100.1 56324 25\r\n"), SMTP), "192.0.2.7"),
        Arguments.of("v1 TCP6", concat(ascii("PROXY TCP6 2001:db8::7 2001:db8::1 1 25\r\n"), SMTP), "2001:db8:0:0:0:0:0:7"),
        Arguments.of("v1 UNKNOWN", concat(ascii("PROXY UNKNOWN\r\n"), SMTP), null),
        Arguments.of("v2 INET", concat(v2(0x21, 0x11, inet(127, 0, 0, 2, 9)), SMTP), "127.0.0.2"),
        Arguments.of("v2 INET6 + TLV", concat(v2(0x21, 0x21, concat(inet6Loopback(2, 9), new byte[] {0x04, 0, 1, 0})), SMTP),
            "0:0:0:0:0:0:0:2"),
        Arguments.of("v2 LOCAL", concat(v2(0x20, 0x00, new byte[0]), SMTP), null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("validStreams")
  void aHeaderSplitAtEveryByteReadsTheSameAndNeverCompletesEarly(String name, byte[] stream, String address) {
    int headerLength = stream.length - SMTP.length;
    for (int cut = 0; cut <= stream.length; cut++) {
      ProxyHeader p = new ProxyHeader(ProxyProtocol.ANY);
      ProxyHeader.Status first = p.feed(Arrays.copyOfRange(stream, 0, cut));
      assertThat(first).as("after %d of %d header bytes", cut, headerLength)
          .isEqualTo(cut < headerLength ? ProxyHeader.Status.NEED_MORE : ProxyHeader.Status.DONE);
      if (first == ProxyHeader.Status.NEED_MORE) {
        assertThat(p.feed(Arrays.copyOfRange(stream, cut, stream.length))).isEqualTo(ProxyHeader.Status.DONE);
      }
      assertThat(p.header().clientAddress()).isEqualTo(address);
      // What came with the header's last byte is the client's; later reads go to the SMTP side directly.
      int restEnd = cut < headerLength ? stream.length : cut;
      assertThat(p.rest()).as("cut at %d", cut).isEqualTo(Arrays.copyOfRange(stream, headerLength, restEnd));
    }
    ProxyHeader bytewise = new ProxyHeader(ProxyProtocol.ANY);
    for (int i = 0; i < headerLength; i++) {
      assertThat(bytewise.feed(new byte[] {stream[i]})).as("byte %d", i)
          .isEqualTo(i < headerLength - 1 ? ProxyHeader.Status.NEED_MORE : ProxyHeader.Status.DONE);
    }
    assertThat(bytewise.header().clientAddress()).isEqualTo(address);
    assertThat(bytewise.rest()).isEmpty();
  }

  // --- malformed ---

  @ParameterizedTest
  @ValueSource(strings = {
      "EHLO client.test\r\n", // an SMTP client talking first
      "GET / HTTP/1.0\r\n",
      "proxy TCP4 192.0.2.7 198.51.100.1 1 25\r\n", // the keyword is upper case
      "PROXX TCP4 192.0.2.7 198.51.100.1 1 25\r\n",
      "PROXYTCP4 192.0.2.7 198.51.100.1 1 25\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 25\n", // bare LF
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 25\r\r\n",
      "PROXY TCP4 192.0.2.7\r198.51.100.1 1 25\r\n",
      "PROXY \r\n",
      "PROXY TCP5 192.0.2.7 198.51.100.1 1 25\r\n",
      "PROXY UDP4 192.0.2.7 198.51.100.1 1 25\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1\r\n", // a field short
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 25 26\r\n", // a field too many
      "PROXY TCP4 192.0.2.7  198.51.100.1 1 25\r\n", // two spaces
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 25 \r\n", // trailing space
      "PROXY\tTCP4 192.0.2.7 198.51.100.1 1 25\r\n",
      "PROXY TCP4 2001:db8::7 198.51.100.1 1 25\r\n", // wrong family for TCP4
      "PROXY TCP4 192.0.2.7 2001:db8::1 1 25\r\n",
      "PROXY TCP6 192.0.2.7 2001:db8::1 1 25\r\n", // wrong family for TCP6
      "PROXY TCP6 2001:db8::7 192.0.2.1 1 25\r\n",
      "PROXY TCP6 2001:db8:::7 2001:db8::1 1 25\r\n",
      "PROXY TCP6 2001:db8::7%eth0 2001:db8::1 1 25\r\n",
      "PROXY TCP4 256.0.2.7 198.51.100.1 1 25\r\n",
      "PROXY TCP4 192.0.02.7 198.51.100.1 1 25\r\n", // a leading zero (octal to inet_aton)
      "PROXY TCP4 192.0.2 198.51.100.1 1 25\r\n",
      "PROXY TCP4 localhost 198.51.100.1 1 25\r\n", // a name, never looked up
      "PROXY TCP4 192.0.2.7 198.51.100.1 65536 25\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 -1 25\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 080 25\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 x\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 \r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 25\u0000\r\n",
      "PROXY TCP4 192.0.2.7 198.51.100.1 1 2\u00e95\r\n", // not ASCII
  })
  void malformedV1LinesAreRefused(String line) {
    byte[] stream = concat(ascii(line), SMTP);
    assertThat(refusal(ProxyProtocol.ANY, stream)).isNotBlank();
    assertNeverDoneWhenSplit(stream);
  }

  @Test
  void aV1LineWithoutItsEndIsRefusedAt107Bytes() {
    byte[] endless = ascii("PROXY UNKNOWN " + "x".repeat(200));
    ProxyHeader p = new ProxyHeader(ProxyProtocol.V1);
    assertThat(p.feed(Arrays.copyOf(endless, 106))).isEqualTo(ProxyHeader.Status.NEED_MORE);
    assertThat(p.feed(new byte[] {'x'})).isEqualTo(ProxyHeader.Status.MALFORMED);
    assertThat(p.error()).contains("no CRLF within 107 bytes");
  }

  static Stream<Arguments> malformedV2() {
    byte[] good = inet(192, 0, 2, 7, 1);
    return Stream.of(
        Arguments.of("version 1", v2(0x11, 0x11, good), "version 1"),
        Arguments.of("version 3", v2(0x31, 0x11, good), "version 3"),
        Arguments.of("command 2", v2(0x22, 0x11, good), "neither LOCAL nor PROXY"),
        Arguments.of("command 15", v2(0x2F, 0x11, good), "neither LOCAL nor PROXY"),
        Arguments.of("AF_UNIX stream", v2(0x21, 0x31, new byte[216]), "0x31"),
        Arguments.of("UDP over IPv4", v2(0x21, 0x12, good), "0x12"),
        Arguments.of("UDP over IPv6", v2(0x21, 0x22, new byte[36]), "0x22"),
        Arguments.of("IPv4, transport unspecified", v2(0x21, 0x10, good), "0x10"),
        Arguments.of("unknown family 4", v2(0x21, 0x41, good), "0x41"),
        Arguments.of("IPv4 block too short", v2(0x21, 0x11, Arrays.copyOf(good, 11)), "cannot hold"),
        Arguments.of("IPv6 in an IPv4-sized block", v2(0x21, 0x21, good), "cannot hold"),
        Arguments.of("length 65535", concat(SIG, new byte[] {0x21, 0x11, (byte) 0xFF, (byte) 0xFF}), "more than"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("malformedV2")
  void malformedV2HeadersAreRefused(String name, byte[] header, String reason) {
    byte[] stream = concat(header, SMTP);
    assertThat(refusal(ProxyProtocol.ANY, stream)).contains(reason);
    assertNeverDoneWhenSplit(stream);
  }

  @Test
  void aWrongByteAnywhereInTheV2SignatureIsRefused() {
    for (int i = 0; i < SIG.length; i++) {
      byte[] stream = v2(0x21, 0x11, inet(192, 0, 2, 7, 1));
      stream[i] ^= 0x20;
      assertThat(refusal(ProxyProtocol.ANY, stream)).as("byte %d", i).isNotBlank();
    }
  }

  @Test
  void aTruncatedHeaderIsNeverDoneItWaitsForMore() {
    // The reader's deadline (smtp.proxyTimeout) then closes the connection.
    byte[] v2 = v2(0x21, 0x11, inet(192, 0, 2, 7, 1));
    assertThat(new ProxyHeader(ProxyProtocol.ANY).feed(Arrays.copyOf(v2, v2.length - 1))).isEqualTo(ProxyHeader.Status.NEED_MORE);
    byte[] v1 = ascii("PROXY TCP4 192.0.2.7 198.51.100.1 1 25\r");
    assertThat(new ProxyHeader(ProxyProtocol.ANY).feed(v1)).isEqualTo(ProxyHeader.Status.NEED_MORE);
    assertThat(new ProxyHeader(ProxyProtocol.ANY).feed(new byte[0])).isEqualTo(ProxyHeader.Status.NEED_MORE);
  }

  @Test
  void aVerdictIsFinalWhateverComesAfter() {
    ProxyHeader bad = new ProxyHeader(ProxyProtocol.ANY);
    assertThat(bad.feed(ascii("EHLO"))).isEqualTo(ProxyHeader.Status.MALFORMED);
    assertThat(bad.feed(ascii("PROXY UNKNOWN\r\n"))).isEqualTo(ProxyHeader.Status.MALFORMED);
    ProxyHeader good = new ProxyHeader(ProxyProtocol.ANY);
    assertThat(good.feed(ascii("PROXY TCP4 192.0.2.7 198.51.100.1 1 25\r\n"))).isEqualTo(ProxyHeader.Status.DONE);
    assertThat(good.feed(ascii("PROXY TCP4 10.0.0.1 198.51.100.1 1 25\r\n"))).isEqualTo(ProxyHeader.Status.DONE);
    assertThat(good.header().clientAddress()).isEqualTo("192.0.2.7");
  }

  /** Fed in two parts cut anywhere, or a byte at a time, a broken stream is never taken. */
  private static void assertNeverDoneWhenSplit(byte[] stream) {
    for (int cut = 0; cut <= stream.length; cut++) {
      ProxyHeader p = new ProxyHeader(ProxyProtocol.ANY);
      p.feed(Arrays.copyOfRange(stream, 0, cut));
      assertThat(p.feed(Arrays.copyOfRange(stream, cut, stream.length))).as("cut at %d", cut)
          .isEqualTo(ProxyHeader.Status.MALFORMED);
    }
    ProxyHeader bytewise = new ProxyHeader(ProxyProtocol.ANY);
    ProxyHeader.Status last = ProxyHeader.Status.NEED_MORE;
    for (byte b : stream) {
      last = bytewise.feed(new byte[] {b});
      assertThat(last).isNotEqualTo(ProxyHeader.Status.DONE);
    }
    assertThat(last).isEqualTo(ProxyHeader.Status.MALFORMED);
  }

  // --- sniffing a peer that may not send one ---

  @Test
  void sniffTellsAHeaderStartFromSmtpAsSoonAsTheBytesDo() {
    assertThat(sniff("PROXY ")).isEqualTo(ProxyHeader.Sniff.HEADER);
    assertThat(sniff("PROXY TCP4 1.2.3.4")).isEqualTo(ProxyHeader.Sniff.HEADER);
    assertThat(sniff(new String(SIG, StandardCharsets.ISO_8859_1))).isEqualTo(ProxyHeader.Sniff.HEADER);
    assertThat(sniff("")).isEqualTo(ProxyHeader.Sniff.UNDECIDED);
    assertThat(sniff("PROX")).isEqualTo(ProxyHeader.Sniff.UNDECIDED);
    assertThat(sniff("\r\n\r\n\0")).isEqualTo(ProxyHeader.Sniff.UNDECIDED);
    assertThat(sniff("EHLO client.test\r\n")).isEqualTo(ProxyHeader.Sniff.NOT_HEADER);
    assertThat(sniff("PROXYX")).isEqualTo(ProxyHeader.Sniff.NOT_HEADER);
    assertThat(sniff("\r\nEHLO")).isEqualTo(ProxyHeader.Sniff.NOT_HEADER);
    assertThat(sniff("Q")).isEqualTo(ProxyHeader.Sniff.NOT_HEADER);
  }

  private static ProxyHeader.Sniff sniff(String s) {
    byte[] b = ascii(s);
    return ProxyHeader.sniff(b, b.length);
  }
}
