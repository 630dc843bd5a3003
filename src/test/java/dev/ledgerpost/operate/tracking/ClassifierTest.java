package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.regex.Pattern;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The shipped rule table against replies as Postfix logs them (docs/design.md §8.13): category and rule. */
class ClassifierTest {
  private static final Classifier SHIPPED = new Classifier(BounceRules.shipped());

  @ParameterizedTest(name = "{0} {1} -> {2} by {3}")
  @CsvSource(delimiter = '|', nullValues = "null", textBlock = """
      5.1.1 | host mx.example.com[192.0.2.1] said: 550 5.1.1 <bob@example.com>: Recipient address rejected: User unknown in virtual mailbox table (in reply to RCPT TO command) | invalid_recipient | invalid-codes
      5.0.0 | host mx.example.com[192.0.2.1] said: 550 No such user here (in reply to RCPT TO command) | invalid_recipient | invalid-text
      5.2.1 | host gmail-smtp-in.l.google.com[192.0.2.2] said: 550 5.2.1 The email account that you tried to reach is disabled. | invalid_recipient | invalid-codes
      4.2.2 | host mx.example.com[192.0.2.1] said: 452 4.2.2 The email account that you tried to reach is over quota. | mailbox_full | mailbox-full-codes
      5.0.0 | host mx.example.com[192.0.2.1] said: 552 Mailbox is full (in reply to end of DATA command) | mailbox_full | mailbox-full-text
      5.7.26 | host gmail-smtp-in.l.google.com[192.0.2.2] said: 550-5.7.26 This mail is unauthenticated, which poses a security risk | auth_failure | auth-codes
      5.7.1 | host mx.example.com[192.0.2.1] said: 550 5.7.1 Email rejected per DMARC policy for example.org | auth_failure | auth-text
      5.7.1 | host mx.example.com[192.0.2.1] said: 554 5.7.1 Service unavailable; Client host [198.51.100.7] blocked using zen.spamhaus.org | spam_block | spam-text
      5.7.1 | host mx.example.com[192.0.2.1] said: 550 5.7.1 Message rejected as spam by Content Filtering | spam_block | spam-text
      5.7.1 | host mx.example.com[192.0.2.1] said: 554 5.7.1 <bob@example.com>: Relay access denied | policy | policy-codes
      5.3.4 | host mx.example.com[192.0.2.1] said: 552 5.3.4 Message size exceeds fixed limit | policy | policy-codes
      4.7.0 | host mx.example.com[192.0.2.1] said: 450 4.7.0 Try again later, closing connection. | policy | policy-codes
      4.4.3 | Host or domain name not found. Name service error for name=example.invalid type=MX: Host not found, try again | dns | dns-codes
      5.4.4 | Host or domain name not found. Name service error for name=example.invalid type=A: Host not found | dns | dns-codes
      4.4.1 | connect to mx.dns.example[192.0.2.1]:25: Connection refused | connection | connection-codes
      4.4.2 | lost connection with mx.example.com[192.0.2.1] while receiving the initial server greeting | connection | connection-codes
      4.0.0 | host mx.example.com[192.0.2.1] said: 421 Connection timed out | connection | connection-text
      5.0.0 | host mx.example.com[192.0.2.1] said: 554 Transaction failed | other | null
      null | null | other | null
      """)
  void theShippedTableClassifiesPostfixsReplies(String code, String reply, String category, String rule) {
    Classifier.Classification c = SHIPPED.classify(code, reply);
    assertThat(c.category().label()).isEqualTo(category);
    assertThat(c.rule()).isEqualTo(rule);
  }

  @Test
  void theFirstMatchingRuleWinsAndACodeRuleNeedsACode() {
    Classifier c = new Classifier(List.of(
        new BounceRule("both", Category.POLICY, List.of("5.7.*"), Pattern.compile("blocked", Pattern.CASE_INSENSITIVE)),
        new BounceRule("code", Category.SPAM_BLOCK, List.of("5.7.*"), null),
        new BounceRule("text", Category.DNS, List.of(), Pattern.compile("blocked", Pattern.CASE_INSENSITIVE))));
    assertThat(c.classify("5.7.1", "550 BLOCKED")).isEqualTo(new Classifier.Classification(Category.POLICY, "both"));
    assertThat(c.classify("5.7.1", "550 nope")).isEqualTo(new Classifier.Classification(Category.SPAM_BLOCK, "code"));
    assertThat(c.classify(null, "550 blocked")).isEqualTo(new Classifier.Classification(Category.DNS, "text"));
    assertThat(c.classify("4.7.1", "450 nope")).isEqualTo(new Classifier.Classification(Category.OTHER, null));
    assertThat(c.classify("5.7", "550 nope")).as("a code of another shape matches no pattern").extracting(Classifier.Classification::rule).isNull();
  }

  /** Whatever the code and the text, the shipped table answers a category, and a named rule for every class 5.7 code. */
  @Property(tries = 300)
  void everyReplyGetsACategoryAndClass7AlwaysARule(@ForAll @IntRange(min = 2, max = 5) int cls, @ForAll @IntRange(max = 9) int subject,
      @ForAll @IntRange(max = 40) int detail, @ForAll String text) {
    Classifier.Classification c = SHIPPED.classify(cls + "." + subject + "." + detail, text);
    assertThat(c.category()).isNotNull();
    if (subject == 7 && cls != 2) {
      assertThat(c.rule()).isNotNull();
    }
  }
}
