package dev.ledgerpost.operate.tracking;

import java.util.List;

/**
 * The bounce classifier (docs/design.md §8.13): the first rule of the table that matches a reply's enhanced status code
 * and text gives its category, and its name is recorded beside it, so that an operator can tell which rule decided
 * (as KumoMTA's classifier does). No rule matching is {@link Category#OTHER} with no rule. Pure and thread-safe.
 */
public final class Classifier {
  /** What the table says of one reply: its category and the name of the rule that said so (null: none matched). */
  public record Classification(Category category, String rule) {}

  private final List<BounceRule> rules;

  Classifier(List<BounceRule> rules) {
    this.rules = List.copyOf(rules);
  }

  /**
   * @param code  the enhanced status code ({@code 5.1.1}; Postfix's {@code dsn=}), or null
   * @param reply the remote reply or Postfix's own account of the failure ({@code connect to ...: Connection refused})
   */
  public Classification classify(String code, String reply) {
    for (BounceRule r : rules) {
      if (r.matches(code, reply)) {
        return new Classification(r.category(), r.name());
      }
    }
    return new Classification(Category.OTHER, null);
  }

  int size() {
    return rules.size();
  }
}
