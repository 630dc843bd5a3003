package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The forms an ENVID is looked for in (docs/design.md §8.13, "Returned DSNs"). */
class XtextTest {
  @Test
  void aValueIsLookedForAsGivenDecodedAndEncoded() {
    // "+12" reads as xtext too: every form is looked for, the row's ENVID is one of them.
    assertThat(Xtext.forms("order+1234")).containsExactly("order+1234", "order\u001234", "order+2B1234");
    assertThat(Xtext.forms("QQ+2B314159")).containsExactly("QQ+2B314159", "QQ+314159", "QQ+2B2B314159");
    assertThat(Xtext.forms("plain")).containsExactly("plain");
    assertThat(Xtext.decode("a+3Db+20c+")).isEqualTo("a=b c+");
    assertThat(Xtext.encode("a=b c\u00e9")).isEqualTo("a+3Db+20c+C3+A9");
  }
}
