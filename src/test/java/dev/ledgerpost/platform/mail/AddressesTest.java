package dev.ledgerpost.platform.mail;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class AddressesTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "john@example.com",
      "\"john smith\"@example.net",
      "\"a\\\"b\"@x.example",
      "\"a\\\\b\"@x.example",
      "\"a@b\"@x.example",
      "\"<a>\"@x.example",
      "\"\"@x.example",
      "a%b@example.com",
      "first.last+tag@example.com",
      "!#$&'*+-/=?^_`{|}~@x.example",
      "john..doe@x.example", // out of RFC, but old mobile carriers hand such addresses out
      "user@[192.0.2.1]",
      "user@[IPv6:2001:db8::1]",
      "ü@exämple.de",
      "a@sub_domain.example"})
  void validMailboxes(String mailbox) {
    assertThat(Addresses.valid(mailbox)).as(mailbox).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "\"john@example.com", // an unbalanced quote
      "john\"@example.com",
      "jo\"hn@example.com",
      "\"a\\\"@x.example", // the closing quote is escaped: never closed
      "\"a\\",
      "\"a b\"c@x.example",
      "\"a b\".c@x.example",
      "a@b@c.example",
      "a b@x.example",
      "a,b@x.example",
      "(a)@x.example",
      "a\\b@x.example",
      "\"a\rb\"@x.example",
      "\"a\nb\"@x.example",
      "\"a\\\rb\"@x.example", // a quoted pair may not carry a control character either
      "\"a\u0000b\"@x.example",
      "\"a\tb\"@x.example",
      "a\u007f@x.example",
      "a@x..example",
      "a@-x.example",
      "a@x.example>",
      "a@\"x\".example",
      "a@[192.0.2.1",
      "a@[]",
      "a@[a b]",
      "@x.example",
      "a@",
      "a"})
  void invalidMailboxes(String mailbox) {
    assertThat(Addresses.valid(mailbox)).as(mailbox).isFalse();
  }

  @Test
  void theLocalPartIsAtMost64OctetsUnlessQuoted() {
    assertThat(Addresses.valid("a".repeat(64) + "@x.example")).isTrue();
    assertThat(Addresses.valid("a".repeat(65) + "@x.example")).isFalse();
  }

  @Test
  void thePathIsSplitFromItsParametersReadingQuotes() {
    assertThat(Addresses.splitPath("<a@b.example> SIZE=5  BODY=8BITMIME"))
        .isEqualTo(new Addresses.PathArgument("<a@b.example>", List.of("SIZE=5", "BODY=8BITMIME")));
    assertThat(Addresses.splitPath(" <a@b.example>")).isEqualTo(new Addresses.PathArgument("<a@b.example>", List.of()));
    assertThat(Addresses.splitPath("<\"john smith\"@example.net> SIZE=5"))
        .isEqualTo(new Addresses.PathArgument("<\"john smith\"@example.net>", List.of("SIZE=5")));
    assertThat(Addresses.splitPath("\"john smith\"@example.net SIZE=5"))
        .isEqualTo(new Addresses.PathArgument("\"john smith\"@example.net", List.of("SIZE=5")));
    assertThat(Addresses.splitPath("<\"a>b\"@x.example>")).isEqualTo(new Addresses.PathArgument("<\"a>b\"@x.example>", List.of()));
    assertThat(Addresses.splitPath("<\"a\\\"> b\"@x.example> X=1"))
        .isEqualTo(new Addresses.PathArgument("<\"a\\\"> b\"@x.example>", List.of("X=1")));
    assertThat(Addresses.splitPath("<>")).isEqualTo(new Addresses.PathArgument("<>", List.of()));
    assertThat(Addresses.splitPath("")).isEqualTo(new Addresses.PathArgument("", List.of()));
  }

  @Test
  void aPathThatNeverEndsOrIsGluedToItsParametersIsMalformed() {
    assertThat(Addresses.splitPath("<\"john@example.com>")).isNull();
    assertThat(Addresses.splitPath("<\"john@example.com> SIZE=5")).isNull();
    assertThat(Addresses.splitPath("\"john@example.com SIZE=5")).isNull();
    assertThat(Addresses.splitPath("<a@b.example")).isNull();
    assertThat(Addresses.splitPath("<a@b.example>SIZE=5")).isNull();
  }

  @Test
  void theMailboxOfAPath() {
    assertThat(Addresses.mailbox("<\"john smith\"@example.net>")).isEqualTo("\"john smith\"@example.net");
    assertThat(Addresses.mailbox("<@relay.example:\"a b\"@x.example>")).isEqualTo("\"a b\"@x.example");
    assertThat(Addresses.mailbox("<>")).isEmpty();
    assertThat(Addresses.mailbox("<\"john@example.com>")).isNull();
  }
}
