package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CidrTest {

  @Test
  void anIpv4NetworkContainsItsAddressesOnly() {
    Cidr net = Cidr.parse("10.0.0.0/8");

    assertThat(net.contains("10.0.0.0")).isTrue();
    assertThat(net.contains("10.255.255.255")).isTrue();
    assertThat(net.contains("11.0.0.1")).isFalse();
    assertThat(net.contains("9.255.255.255")).isFalse();
  }

  @Test
  void aPrefixInsideAnOctetMasksTheRightBits() {
    Cidr net = Cidr.parse("192.168.16.0/20");

    assertThat(net.contains("192.168.16.0")).isTrue();
    assertThat(net.contains("192.168.31.255")).isTrue();
    assertThat(net.contains("192.168.15.255")).isFalse();
    assertThat(net.contains("192.168.32.0")).isFalse();
  }

  @Test
  void hostBitsInTheNetworkAddressDoNotMatter() {
    assertThat(Cidr.parse("10.1.2.3/8").contains("10.200.0.1")).isTrue();
  }

  @Test
  void aBareAddressIsAHostRoute() {
    Cidr host = Cidr.parse("192.0.2.1");

    assertThat(host.prefix()).isEqualTo(32);
    assertThat(host.contains("192.0.2.1")).isTrue();
    assertThat(host.contains("192.0.2.2")).isFalse();
    assertThat(Cidr.parse("::1").prefix()).isEqualTo(128);
  }

  @Test
  void anIpv6NetworkContainsItsAddressesOnly() {
    Cidr net = Cidr.parse("2001:db8::/32");

    assertThat(net.contains("2001:db8::1")).isTrue();
    assertThat(net.contains("2001:0db8:ffff:ffff:ffff:ffff:ffff:ffff")).isTrue();
    assertThat(net.contains("2001:db9::1")).isFalse();
    assertThat(Cidr.parse("::1/128").contains("0:0:0:0:0:0:0:1")).isTrue();
    assertThat(Cidr.parse("::1/128").contains("::2")).isFalse();
  }

  @Test
  void anIpv6PrefixInsideAGroupMasksTheRightBits() {
    Cidr net = Cidr.parse("fe80::/10");

    assertThat(net.contains("fe80::1")).isTrue();
    assertThat(net.contains("febf::1")).isTrue();
    assertThat(net.contains("fec0::1")).isFalse();
  }

  @Test
  void aScopedLinkLocalAddressIsMatchedWithoutItsScope() {
    assertThat(Cidr.parse("fe80::/10").contains("fe80::1%eth0")).isTrue();
  }

  @Test
  void anIpv4MappedIpv6AddressMatchesTheIpv4Network() {
    assertThat(Cidr.parse("127.0.0.0/8").contains("::ffff:127.0.0.1")).isTrue();
    assertThat(Cidr.parse("127.0.0.0/8").contains("0:0:0:0:0:ffff:7f00:1")).isTrue();
    assertThat(Cidr.parse("10.0.0.0/8").contains("::ffff:11.0.0.1")).isFalse();
  }

  @Test
  void familiesDoNotMixOtherwise() {
    assertThat(Cidr.parse("0.0.0.0/0").contains("2001:db8::1")).isFalse();
    assertThat(Cidr.parse("::/0").contains("10.0.0.1")).isFalse();
    assertThat(Cidr.parse("::/96").contains("::a00:1")).isTrue(); // IPv4-compatible form stays IPv6
    assertThat(Cidr.parse("10.0.0.0/8").contains("::a00:1")).isFalse();
  }

  @Test
  void prefixZeroContainsEveryAddressOfItsFamily() {
    assertThat(Cidr.parse("0.0.0.0/0").contains("203.0.113.9")).isTrue();
    assertThat(Cidr.parse("0.0.0.0/0").contains("255.255.255.255")).isTrue();
    assertThat(Cidr.parse("::/0").contains("2001:db8::1")).isTrue();
    assertThat(Cidr.parse("::/0").contains("::")).isTrue();
  }

  /** The relay policy asks with what the socket reports; anything but a literal must fail closed. */
  @Test
  void somethingThatIsNotAnAddressIsNotContainedEvenInLoopbackNetworks() {
    Cidr loopback = Cidr.parse("127.0.0.0/8"); // a default relay network

    assertThat(loopback.contains("")).isFalse(); // InetAddress reads "" as localhost
    assertThat(loopback.contains("localhost")).isFalse();
    assertThat(loopback.contains("unknown")).isFalse(); // what SmtpVerticle passes for a missing address
    assertThat(loopback.contains(null)).isFalse();
    assertThat(loopback.contains("127.1")).isFalse();
    assertThat(Cidr.parse("0.0.0.0/0").contains("")).isFalse();
    assertThat(Cidr.parse("::/0").contains("::1::2")).isFalse();
  }

  @Test
  void whitespaceAroundTheNetworkIsIgnored() {
    Cidr net = Cidr.parse("  10.0.0.0/8 ");

    assertThat(net.toString()).isEqualTo("10.0.0.0/8");
    assertThat(net).isEqualTo(Cidr.parse("10.0.0.0/8")).hasSameHashCodeAs(Cidr.parse("10.0.0.0/8"));
  }

  @ParameterizedTest(name = "''{0}'' is refused")
  @ValueSource(strings = {
      "", " ", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/x", "10.0.0.0/8/8",
      "::1/129", "2001:db8::/", "1::2::3", "example.org", "localhost", "10.0.0.0 /8",
      "256.1.2.3", "1.2.3.4.5"})
  void malformedNetworksAreRefused(String text) {
    assertThatThrownBy(() -> Cidr.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(text.trim());
  }

  /**
   * The class promises literals only: a name spelled with hex letters must be refused as such, not
   * looked up in DNS (where it might resolve and become a relay network).
   */
  @ParameterizedTest(name = "''{0}'' is refused")
  @ValueSource(strings = {"cafe.de", "abc", "bad.cafe/24", "dead:beef:cafe"})
  void hostNamesMadeOfHexLettersAreRefused(String text) {
    assertThatThrownBy(() -> Cidr.parse(text)).isInstanceOf(IllegalArgumentException.class);
  }

  /**
   * Short IPv4 forms are read by InetAddress the inet_aton way: "10.1/16" would become 10.0.0.1/16,
   * not the 10.1.0.0/16 an operator means. Only dotted quads are accepted.
   */
  @ParameterizedTest(name = "''{0}'' is refused")
  @ValueSource(strings = {"10.1/16", "127.1", "10.0.0/24"})
  void shortOrAmbiguousIpv4FormsAreRefused(String text) {
    assertThatThrownBy(() -> Cidr.parse(text)).isInstanceOf(IllegalArgumentException.class);
  }

  /**
   * A dotted quad is read by hand since issue 33; before, a regex chose it and InetAddress read it. Both must agree on
   * every edge, and a network must contain the same addresses.
   */
  @Test
  void aDottedQuadIsReadAsTheRegexAndInetAddressReadIt() throws Exception {
    java.util.regex.Pattern ipv4 = java.util.regex.Pattern.compile(
        "(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");
    String[] inputs = {"127.0.0.1", "0.0.0.0", "255.255.255.255", "256.1.1.1", "1.1.1.256", "01.1.1.1", "1.1.1.01",
        "1.1.1.00", "1.1.1.0", "10.1", "10.1.1", "1.1.1.1.", ".1.1.1.1", "1..1.1", "1.1.1.1 ", " 1.1.1.1", "1234.1.1.1",
        "1.1.1.1234", "199.249.250.251", "249.1.1.1", "250.1.1.1", "25.5.5.5", "1.1.1.١", "١.1.1.1", "a.b.c.d", "",
        "1.1.1.1/8", "::1", "::ffff:1.2.3.4", "0x7f.0.0.1", "+1.1.1.1", "1.1.1.-1"};
    for (String in : inputs) {
      byte[] expected = ipv4.matcher(in).matches() ? java.net.InetAddress.getByName(in).getAddress() : null;
      assertThat(Cidr.dottedQuad(in)).as(in).isEqualTo(expected);
    }
    Cidr net = Cidr.parse("192.0.2.0/24");
    assertThat(net.contains("192.0.2.7")).isTrue();
    assertThat(net.contains("192.0.3.7")).isFalse();
    assertThat(net.contains("192.0.2.07")).isFalse(); // not a literal this gateway reads
    assertThat(Cidr.parse("::1").contains("::1")).isTrue();
    assertThat(Cidr.parse("1.2.3.0/24").contains("::ffff:1.2.3.4")).isTrue();
  }
}
