package dev.ledgerpost.operate.tracking;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Why a recipient's mail was bounced or deferred (docs/design.md §8.13), as a bounce classifier's rule table says: the
 * names are the ones facts, events and the suppression list's categories carry ({@code invalid_recipient}).
 */
public enum Category {
  INVALID_RECIPIENT, MAILBOX_FULL, SPAM_BLOCK, POLICY, AUTH_FAILURE, DNS, CONNECTION, OTHER;

  /** The name a rule file, a fact and an event use: {@code invalid_recipient}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The category a rule file names, or null. */
  static Category of(String label) {
    for (Category c : values()) {
      if (c.label().equals(label)) {
        return c;
      }
    }
    return null;
  }

  static String labels() {
    return Arrays.stream(values()).map(Category::label).collect(Collectors.joining(", "));
  }
}
