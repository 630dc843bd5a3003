package dev.ledgerpost.operate.tracking;

import java.util.List;
import java.util.regex.Pattern;

/**
 * One row of the rule table: a recipient's reply is of {@code category} when its enhanced status code matches one of
 * {@code codes} (none: any code) and its text matches {@code text} (null: any text). A code pattern is
 * {@code class.subject.detail} where each part may be {@code *} ({@code *.1.1}, {@code 5.7.*}).
 */
record BounceRule(String name, Category category, List<String> codes, Pattern text) {
  boolean matches(String code, String reply) {
    return codeMatches(code) && (text == null || (reply != null && text.matcher(reply).find()));
  }

  private boolean codeMatches(String code) {
    if (codes.isEmpty()) {
      return true;
    }
    if (code == null) {
      return false;
    }
    String[] parts = code.split("\\.", -1);
    for (String pattern : codes) {
      String[] want = pattern.split("\\.", -1);
      if (want.length == parts.length && partsMatch(want, parts)) {
        return true;
      }
    }
    return false;
  }

  private static boolean partsMatch(String[] want, String[] parts) {
    for (int i = 0; i < want.length; i++) {
      if (!want[i].equals("*") && !want[i].equals(parts[i])) {
        return false;
      }
    }
    return true;
  }
}
