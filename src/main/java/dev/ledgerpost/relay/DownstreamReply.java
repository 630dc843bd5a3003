package dev.ledgerpost.relay;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One complete reply of the downstream server: its code, enhanced status code (if it gave one) and text. */
public record DownstreamReply(int code, String enhancedCode, String text) {
  private static final Pattern ENHANCED = Pattern.compile("^([245])\\.(\\d{1,3})\\.(\\d{1,3})(?:\\s+|$)");
  /** docs/contract.md §1.9: a relayed reply text is one line, printable ASCII, at most 128 bytes. */
  public static final int MAX_RELAYED_TEXT = 128;

  /** Builds the reply from its lines as read ("250-first", "250 last"), already stripped of CRLF. */
  public static DownstreamReply parse(List<String> lines) {
    String first = lines.get(0);
    int code = Integer.parseInt(first.substring(0, 3));
    StringBuilder text = new StringBuilder();
    String enhanced = null;
    for (String line : lines) {
      String t = line.length() > 4 ? line.substring(4) : "";
      Matcher m = ENHANCED.matcher(t);
      if (m.find()) {
        if (enhanced == null && m.group(1).charAt(0) == first.charAt(0)) {
          enhanced = m.group(1) + "." + m.group(2) + "." + m.group(3);
        }
        t = t.substring(m.end());
      }
      if (text.length() > 0) {
        text.append(' ');
      }
      text.append(t.trim());
    }
    return new DownstreamReply(code, enhanced, text.toString());
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
