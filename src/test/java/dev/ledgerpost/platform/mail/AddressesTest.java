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

  /**
   * The domain check reads the mailbox in place since issue 33; before, it split a substring at every dot. Both must
   * agree on every edge: the old check is kept here as the reference and run on the same mailboxes.
   */
  @Test
  void domainCheckAgreesWithTheSplittingOne() {
    String long63 = "a".repeat(63);
    List<String> domains = List.of("example.com", "example.com.", ".example.com", "example..com", "", ".", "..",
        "-example.com", "example-.com", "ex-ample.com", "a.-b.c", "a.b-.c", long63 + ".com", long63 + "a.com",
        "com." + long63, "com." + long63 + "b", "exämple.de", "xn--exmple-cua.de", "bücher.例え.jp", "sub_domain.example",
        "exa mple.com", "exa\tmple.com", "a@b.com", "\"q\".com", "[192.0.2.1]", "[IPv6:2001:db8::1]", "[]", "[",
        "[a b]", "[a]b", "[a\\b]", "[ü]", "x[1]", "1.2.3.4", "_", "-", "a-", "a", "localhost", "a.b.c.d.e.f.g",
        "example.com-", "e\u007fx.com");
    List<String> locals = List.of("john", "\"john smith\"", "\"a@b\"", "first.last+tag", "ü", "\"\"");
    for (String local : locals) {
      for (String domain : domains) {
        String mailbox = local + "@" + domain;
        assertThat(Addresses.valid(mailbox)).as(mailbox).isEqualTo(oldValid(mailbox));
      }
    }
    assertThat(Addresses.valid("john")).isFalse(); // no @ at all
    assertThat(Addresses.valid("john@")).isFalse();
    assertThat(Addresses.valid("@example.com")).isFalse();
    assertThat(Addresses.valid("john@example.com.")).isFalse(); // a trailing dot is an empty label, as before
    assertThat(Addresses.valid("john@bücher.example")).isTrue();
  }

  /** Addresses.valid as it was before issue 33 (the local part's checks go through the class: they did not change). */
  private static boolean oldValid(String mailbox) {
    int at = mailbox.lastIndexOf('@');
    if (!Addresses.valid(mailbox.substring(0, at) + "@x.example")) {
      return false; // the local part (or the length) alone refuses it, as it did
    }
    return mailbox.length() <= Addresses.MAX_PATH && oldDomain(mailbox.substring(at + 1));
  }

  private static boolean oldDomain(String domain) {
    if (domain.startsWith("[")) {
      if (!domain.endsWith("]") || domain.length() <= 2) {
        return false;
      }
      for (int i = 1; i < domain.length() - 1; i++) {
        char c = domain.charAt(i);
        if (c <= ' ' || c > '~' || c == '[' || c == ']' || c == '\\') {
          return false;
        }
      }
      return true;
    }
    for (String label : domain.split("\\.", -1)) {
      if (label.isEmpty() || label.length() > 63 || label.startsWith("-") || label.endsWith("-")) {
        return false;
      }
      for (int i = 0; i < label.length(); i++) {
        char c = label.charAt(i);
        if (!(((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) || c == '-' || c == '_'
            || c >= 0x80)) {
          return false;
        }
      }
    }
    return true;
  }
}
