package dev.ledgerpost.platform.mail;

import java.util.ArrayList;
import java.util.List;

/**
 * RFC 5321 path handling: strict enough to refuse junk, lenient where real clients differ (a space
 * after the colon, a path without angle brackets, dots out of place in a local part).
 *
 * <p>Quoted local parts ({@code "john smith"@example.net}, {@code "a\"b"@x}) are valid mailboxes and
 * are relayed as given, so a quote is read as a quote everywhere: a path ends at the first {@code >}
 * outside quotes, and a quote that is never closed makes the whole path malformed. Nothing in an
 * accepted mailbox can end a command line downstream: no control character, quoted or not.
 */
public final class Addresses {
  static final int MAX_PATH = 256;
  /** RFC 5322 atext without the letters and digits, which are checked apart. */
  private static final String ATEXT_SPECIALS = "!#$%&'*+-/=?^_`{|}~";

  private Addresses() {}

  /** A MAIL FROM or RCPT TO argument: the path as written (brackets included), then its parameters. */
  public record PathArgument(String path, List<String> parameters) {}

  /**
   * Splits what follows "FROM:" or "TO:" into the path and its space-separated parameters, reading
   * quotes in the path; null when the path never ends (an unbalanced quote or a missing {@code >}) or
   * is glued to what follows it.
   */
  public static PathArgument splitPath(String text) {
    int n = text.length();
    int i = 0;
    while (i < n && text.charAt(i) == ' ') {
      i++;
    }
    int start = i;
    boolean bracketed = i < n && text.charAt(i) == '<';
    boolean quoted = false;
    int end = -1;
    for (int j = bracketed ? i + 1 : i; j < n; j++) {
      char c = text.charAt(j);
      if (quoted && c == '\\') {
        j++; // a quoted pair: the next character is taken as it is
      } else if (c == '"') {
        quoted = !quoted;
      } else if (!quoted && (bracketed ? c == '>' : c == ' ')) {
        end = bracketed ? j + 1 : j;
        break;
      }
    }
    if (end < 0) {
      if (bracketed || quoted) {
        return null;
      }
      end = n;
    }
    if (end < n && text.charAt(end) != ' ') {
      return null; // "<a@b>SIZE=1": no space before the parameters
    }
    List<String> parameters = new ArrayList<>(2);
    int k = end;
    while (k < n) {
      while (k < n && text.charAt(k) == ' ') {
        k++;
      }
      int wordStart = k;
      while (k < n && text.charAt(k) != ' ') {
        k++;
      }
      if (k > wordStart) {
        parameters.add(text.substring(wordStart, k));
      }
    }
    return new PathArgument(text.substring(start, end), parameters);
  }

  /** The mailbox of a path ({@code <a@b>}, {@code <@route:a@b>}, or a bare {@code a@b}); "" for {@code <>}; null if malformed. */
  public static String mailbox(String path) {
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

  /** A mailbox, local@domain, as RFC 5321 §4.1.2 (and RFC 6531 for UTF-8) has it. */
  public static boolean valid(String mailbox) {
    if (mailbox.length() > MAX_PATH) {
      return false;
    }
    int at = mailbox.startsWith("\"") ? quotedStringEnd(mailbox) : dotString(mailbox);
    if (at <= 0 || at >= mailbox.length() - 1 || mailbox.charAt(at) != '@') {
      return false;
    }
    if (at > 64 && mailbox.charAt(0) != '"') {
      return false;
    }
    return domain(mailbox, at + 1);
  }

  /** The index after a quoted string's closing quote, or -1: qtext and quoted pairs, printable only. */
  private static int quotedStringEnd(String s) {
    for (int i = 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"') {
        return i + 1;
      }
      if (c == '\\') {
        i++;
        if (i >= s.length() || !printable(s.charAt(i))) {
          return -1;
        }
      } else if (!printable(c)) {
        return -1;
      }
    }
    return -1; // never closed
  }

  /** The index of the '@' after an unquoted local part, or -1 when a character is not atext or a dot. */
  private static int dotString(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '@') {
        return i;
      }
      if (!(letterOrDigit(c) || c == '.' || ATEXT_SPECIALS.indexOf(c) >= 0 || c >= 0x80)) {
        return -1;
      }
    }
    return -1;
  }

  /**
   * Whether {@code s} from {@code from} to its end is a domain or an address literal. Read in place, label by label
   * (issue 33: a substring and a regex split for every address checked were 6 KiB a message); the same rules as
   * splitting at every dot: no empty label (so no leading, trailing or double dot), at most 63 characters, no hyphen
   * at either end.
   */
  private static boolean domain(String s, int from) {
    int end = s.length();
    if (from < end && s.charAt(from) == '[') { // address literal: printable without brackets, backslash or space
      if (s.charAt(end - 1) != ']' || end - from <= 2) {
        return false;
      }
      for (int i = from + 1; i < end - 1; i++) {
        char c = s.charAt(i);
        if (c <= ' ' || c > '~' || c == '[' || c == ']' || c == '\\') {
          return false;
        }
      }
      return true;
    }
    int labelStart = from;
    for (int i = from; i <= end; i++) {
      char c = i < end ? s.charAt(i) : '.';
      if (c == '.') {
        int length = i - labelStart;
        if (length == 0 || length > 63 || s.charAt(labelStart) == '-' || s.charAt(i - 1) == '-') {
          return false;
        }
        labelStart = i + 1;
      } else if (!(letterOrDigit(c) || c == '-' || c == '_' || c >= 0x80)) {
        // "_" is not in a host name, but is in real ones; non-ASCII is an SMTPUTF8 domain (checked apart).
        return false;
      }
    }
    return true;
  }

  /** Printable US-ASCII with space (RFC 5321 qtextSMTP and quoted pairs), or UTF-8 beyond ASCII (RFC 6531). */
  private static boolean printable(char c) {
    return (c >= ' ' && c <= '~') || c >= 0x80;
  }

  private static boolean letterOrDigit(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
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
