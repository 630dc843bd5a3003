package dev.ledgerpost.smtp;

/** RFC 5321 path handling: strict enough to refuse junk, lenient where real clients differ. */
public final class Addresses {
  static final int MAX_PATH = 256;

  private Addresses() {}

  /** The mailbox of a path ({@code <a@b>}, {@code <@route:a@b>}, or a bare {@code a@b}); "" for {@code <>}; null if malformed. */
  static String mailbox(String path) {
    String p = path.trim();
    if (p.startsWith("<")) {
      if (!p.endsWith(">")) {
        return null;
      }
      p = p.substring(1, p.length() - 1);
    }
    if (p.startsWith("@")) { // obsolete source route: "@relay1,@relay2:user@host"
      int colon = p.indexOf(':');
      if (colon < 0) {
        return null;
      }
      p = p.substring(colon + 1);
    }
    if (p.isEmpty()) {
      return "";
    }
    return valid(p) ? p : null;
  }

  public static boolean valid(String mailbox) {
    if (mailbox.length() > MAX_PATH) {
      return false;
    }
    int at = mailbox.lastIndexOf('@');
    if (at <= 0 || at == mailbox.length() - 1) {
      return false;
    }
    String local = mailbox.substring(0, at);
    String domain = mailbox.substring(at + 1);
    if (local.length() > 64 && !local.startsWith("\"")) {
      return false;
    }
    for (int i = 0; i < mailbox.length(); i++) {
      char c = mailbox.charAt(i);
      if (c <= ' ' || c == 0x7f || c == '<' || c == '>') {
        if (!(c == ' ' && local.startsWith("\"") && i < at)) {
          return false;
        }
      }
    }
    if (domain.startsWith("[")) {
      return domain.endsWith("]") && domain.length() > 2;
    }
    for (String label : domain.split("\\.", -1)) {
      if (label.isEmpty() || label.length() > 63 || label.startsWith("-") || label.endsWith("-")) {
        return false;
      }
    }
    return true;
  }

  public static boolean ascii(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) > 0x7e) {
        return false;
      }
    }
    return true;
  }
}
