package dev.ledgerpost.relay;

import java.util.List;

/** One complete reply of the downstream server: its code, enhanced status code (if it gave one) and text. */
public record DownstreamReply(int code, String enhancedCode, String text) {
  /** docs/contract.md §1.9: a relayed reply text is one line, printable ASCII, at most 128 bytes. */
  public static final int MAX_RELAYED_TEXT = 128;

  /**
   * Builds the reply from its lines as read ("250-first", "250 last"), already stripped of CRLF. Each line's text is
   * what follows the code and its separator, less a leading enhanced status code ({@code [245].d{1,3}.d{1,3}} followed
   * by white space or the end), trimmed; the lines' texts are joined by a space. Read in place, without a regex or a
   * substring per line (issue 33: 2.7 KiB a message).
   */
  public static DownstreamReply parse(List<String> lines) {
    String first = lines.get(0);
    int code = Integer.parseInt(first, 0, 3, 10);
    String enhanced = null;
    String single = null;
    StringBuilder text = null;
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n);
      int from = Math.min(4, line.length());
      int codeEnd = enhancedEnd(line, from);
      if (codeEnd >= 0) {
        if (enhanced == null && line.charAt(from) == first.charAt(0)) {
          enhanced = line.substring(from, codeEnd);
        }
        from = skipSpace(line, codeEnd);
      }
      int to = line.length();
      while (from < to && line.charAt(from) <= ' ') {
        from++; // String.trim's rule: anything up to the space
      }
      while (to > from && line.charAt(to - 1) <= ' ') {
        to--;
      }
      if (lines.size() == 1) {
        single = line.substring(from, to);
      } else {
        if (text == null) {
          text = new StringBuilder(line.length() * lines.size());
        } else if (text.length() > 0) {
          text.append(' '); // as before: no space for the empty texts of leading lines
        }
        text.append(line, from, to);
      }
    }
    return new DownstreamReply(code, enhanced, single != null ? single : text.toString());
  }

  /**
   * Where an enhanced status code at {@code from} ends (before the white space after it), or -1 when none starts there:
   * a class of 2, 4 or 5, then two numbers of one to three ASCII digits, each after a dot, then white space or the end.
   */
  private static int enhancedEnd(String s, int from) {
    if (from >= s.length()) {
      return -1;
    }
    char cls = s.charAt(from);
    if (cls != '2' && cls != '4' && cls != '5') {
      return -1;
    }
    int i = from + 1;
    for (int part = 0; part < 2; part++) {
      if (i >= s.length() || s.charAt(i) != '.') {
        return -1;
      }
      int digits = ++i;
      while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        i++;
      }
      if (i == digits || i - digits > 3) {
        return -1;
      }
    }
    if (i == s.length() || whiteSpace(s.charAt(i))) {
      return i;
    }
    // A regex's "$" also matched before a line's last character when that is a Unicode line terminator.
    char last = s.charAt(i);
    return i == s.length() - 1 && (last == '\u0085' || last == '\u2028' || last == '\u2029') ? i : -1;
  }

  private static int skipSpace(String s, int i) {
    while (i < s.length() && whiteSpace(s.charAt(i))) {
      i++;
    }
    return i;
  }

  /** A regex's \\s: space, tab, LF, vertical tab, form feed, CR. */
  private static boolean whiteSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == 0x0B || c == '\f' || c == '\r';
  }

  public boolean positive() {
    return code >= 200 && code < 400;
  }

  public boolean transientFailure() {
    return code >= 400 && code < 500;
  }

  public boolean permanentFailure() {
    return code >= 500;
  }

  /** The enhanced code to show a client: the downstream's, or a generic one of the same class. */
  public String enhancedOrDefault(String detail) {
    return enhancedCode != null ? enhancedCode : (code / 100) + "." + detail;
  }

  /** The text made safe to put in a reply of ours: one line, printable ASCII, bounded. */
  public String sanitizedText() {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < text.length() && sb.length() < MAX_RELAYED_TEXT; i++) {
      char c = text.charAt(i);
      sb.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return sb.toString().trim();
  }

  @Override
  public String toString() {
    return code + (enhancedCode == null ? "" : " " + enhancedCode) + (text.isEmpty() ? "" : " " + text);
  }
}
