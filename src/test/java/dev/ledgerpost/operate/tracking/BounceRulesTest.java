package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rule file's form and its errors: each bad line named by its number, all at once, as a configuration error. */
class BounceRulesTest {
  @TempDir
  Path dir;

  @Test
  void suppressionBounceCategoriesMustBeTheClassifiersCategories() {
    TrackingPart.checkBounceCategories(List.of("invalid_recipient", "mailbox_full"));
    TrackingPart.checkBounceCategories(List.of());
    assertThatThrownBy(() -> TrackingPart.checkBounceCategories(List.of("invalid_recipient", "hard_bounce")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "suppression.bounceCategories: hard_bounce is not a bounce category (" + Category.labels() + ")"));
  }

  @Test
  void theOperatorsRulesComeBeforeTheShippedOnes() throws Exception {
    Path f = dir.resolve("rules.conf");
    Files.writeString(f, "# ours\n\nmailbox-gone  invalid_recipient  5.2.2  ^.*said: 552 5\\.2\\.2 mailbox gone\nour-relay policy 5.7.1,4.7.* relay\n");
    Classifier c = BounceRules.load(f.toString());
    assertThat(c.size()).isEqualTo(BounceRules.shipped().size() + 2);
    assertThat(c.classify("5.2.2", "host x said: 552 5.2.2 MAILBOX GONE")).isEqualTo(
        new Classifier.Classification(Category.INVALID_RECIPIENT, "mailbox-gone"));
    assertThat(c.classify("5.2.2", "host x said: 552 5.2.2 mailbox full")).isEqualTo(
        new Classifier.Classification(Category.MAILBOX_FULL, "mailbox-full-codes"));
    assertThat(c.classify("4.7.1", "Relay denied")).isEqualTo(new Classifier.Classification(Category.POLICY, "our-relay"));
  }

  @Test
  void anEmptySettingIsTheShippedTableAlone() {
    assertThat(BounceRules.load("").size()).isEqualTo(BounceRules.shipped().size()).isGreaterThan(10);
  }

  @Test
  void everyBadLineIsNamedByItsNumber() throws Exception {
    Path f = dir.resolve("rules.conf");
    Files.writeString(f, String.join("\n", "# rules", "ok other -", "lonely", "two spam 5.7.1", "ok policy -",
        "badcode policy 5.71", "badre policy - (unclosed", "bad/name policy -", ""));
    assertThatThrownBy(() -> BounceRules.load(f.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tracking.rulesFile " + f + " line 3: expected name category codes [text]",
            "tracking.rulesFile " + f + " line 4: unknown category 'spam' (one of invalid_recipient, mailbox_full, spam_block, "
                + "policy, auth_failure, dns, connection, other)",
            "tracking.rulesFile " + f + " line 5: rule ok is named twice",
            "tracking.rulesFile " + f + " line 6: '5.71' is not an enhanced status code pattern (like 5.1.1, *.2.2 or 5.7.*)",
            "tracking.rulesFile " + f + " line 7: bad regular expression: Unclosed group near index 9",
            "tracking.rulesFile " + f + " line 8: 'bad/name' is not a rule name (letters, digits, '.', '_', '-')"));
  }

  @Test
  void aMissingFileIsOneProblem() {
    Path f = dir.resolve("absent.conf");
    assertThatThrownBy(() -> BounceRules.load(f.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).singleElement().asString()
            .startsWith("tracking.rulesFile " + f + ": cannot be read"));
  }
}
