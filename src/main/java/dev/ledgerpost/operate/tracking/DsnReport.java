package dev.ledgerpost.operate.tracking;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A returned delivery status notification (RFC 3464 {@code multipart/report; report-type=delivery-status}), read from a
 * message's bytes (docs/design.md §8.13, "Returned DSNs"). Pure and bounded: only the first {@link #MAX_BYTES} are
 * looked at, at most {@link #MAX_RECIPIENTS} recipients are kept, every value is cut at {@link #MAX_VALUE}; whatever the
 * input, {@link #parse} answers a {@link Report} or an {@link Unparseable}, never an exception. The per-message fields
 * ({@code Original-Envelope-Id}, {@code Reporting-MTA}, {@code Arrival-Date}), each recipient's
 * ({@code Final-Recipient}, {@code Original-Recipient}, {@code Action}, {@code Status}, {@code Remote-MTA},
 * {@code Diagnostic-Code}, {@code Last-Attempt-Date}) and the returned message's (or headers') {@code Message-ID}.
 */
public final class DsnReport {
  /** What is read of a message: the report's parts come before the returned message's body. */
  static final int MAX_BYTES = 1 << 20;
  static final int MAX_RECIPIENTS = 100;
  static final int MAX_VALUE = 1000;
  private static final int MAX_PARTS = 20;
  private static final Pattern STATUS = Pattern.compile("^([245])\\.(\\d{1,3})\\.(\\d{1,3})(?!\\d)");
  private static final Pattern PARAM = Pattern.compile(";\\s*([A-Za-z0-9_.-]+)\\s*=\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[^;\\s]+)");

  private DsnReport() {}

  /** What a message's bytes were found to be. */
  public sealed interface Result permits Report, Unparseable {}

  /** A report: at least one recipient with its {@code Action}. {@code returnedMessageId} null when none was returned. */
  public record Report(String envelopeId, String reportingMta, Instant arrivalDate, List<Recipient> recipients,
      String returnedMessageId) implements Result {}

  /** Not a delivery-status report that can be read, and why (one short line). */
  public record Unparseable(String reason) implements Result {
    /** Whether the message does not even say it is a report (then it is not a DSN at all, rather than a malformed one). */
    public boolean notAReport() {
      return reason.equals(NOT_A_REPORT);
    }
  }

  static final String NOT_A_REPORT = "not multipart/report; report-type=delivery-status";

  /**
   * One recipient's fields: the addresses without their type ({@code rfc822;}), {@code action} in lower case,
   * {@code status} the bare code ({@code 5.1.1}, null when it is not one), {@code remoteMta} and {@code diagnostic}
   * without their type, {@code group} the fields as they were (the evidence).
   */
  public record Recipient(String finalRecipient, String originalRecipient, String action, String status, String remoteMta,
      String diagnostic, Instant lastAttempt, String group) {
    /** The tracking state this recipient's Action reports (docs/design.md §8.13), or null for one tracking does not record. */
    public String state() {
      if (action == null) {
        return null;
      }
      return switch (action) {
        // A failure with a transient status is a message whose time ran out (Postfix: 4.4.7, "delivery time expired").
        case "failed" -> status != null && status.startsWith("4.") ? "expired" : "bounced";
        case "delayed" -> "deferred";
        case "delivered", "relayed", "expanded" -> "delivered";
        default -> null;
      };
    }
  }

  /** Whether a top-level Content-Type value is {@code multipart/report} with {@code report-type=delivery-status}. */
  public static boolean isDeliveryStatusReport(String contentType) {
    if (contentType == null) {
      return false;
    }
    String type = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    String reportType = param(contentType, "report-type");
    return type.equals("multipart/report") && reportType != null
        && (reportType.equalsIgnoreCase("delivery-status") || reportType.equalsIgnoreCase("global-delivery-status"));
  }

  /** How much of a message's start {@link #saysReport} reads: a header block longer than that is no DSN worth asking about. */
  public static final int HEAD_BYTES = 64 * 1024;

  /**
   * Whether a message's own header block says it is a delivery-status report (its Content-Type), from its first bytes (at
   * most {@link #HEAD_BYTES} are read; DATA's dot-stuffing changes no Content-Type). Cheap and never throwing: the SMTP
   * intake asks it on its event loop before it asks tracking anything (docs/design.md §8.13, "Returned DSNs").
   */
  public static boolean saysReport(byte[] head) {
    try {
      String text = new String(head, 0, Math.min(head.length, HEAD_BYTES), StandardCharsets.ISO_8859_1);
      return isDeliveryStatusReport(field(headers(text.split("\r?\n", -1), new int[] {0}), "content-type"));
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * A report's identity (docs/data-model.md §5.27): the SHA-256 of its per-message fields and every recipient's fields as
   * they were. A DSN that goes round a mail loop keeps it (an MTA adds trace lines, never touches the report); two
   * reports of one message differ in their recipients' groups (a delay, then the failure).
   */
  static byte[] identity(Report r) {
    StringBuilder b = new StringBuilder();
    b.append(r.reportingMta()).append('\n').append(r.envelopeId()).append('\n').append(r.arrivalDate()).append('\n')
        .append(r.returnedMessageId());
    for (Recipient p : r.recipients()) {
      b.append("\n\n").append(p.group());
    }
    return Fact.sha256(b.toString());
  }

  /** Parses a message (its bytes, not dot-stuffed), never throwing. */
  public static Result parse(byte[] message) {
    try {
      return read(message == null ? new byte[0] : message);
    } catch (RuntimeException | StackOverflowError e) {
      return new Unparseable("unreadable: " + e.getClass().getSimpleName());
    }
  }

  /** DATA's wire form made the message itself: a line's leading dot removed (RFC 5321 §4.5.2), a copy. */
  public static byte[] unstuffed(byte[] wire) {
    byte[] out = new byte[wire.length];
    int n = 0;
    boolean lineStart = true;
    for (byte b : wire) {
      if (lineStart && b == '.') {
        lineStart = false;
        continue;
      }
      out[n++] = b;
      lineStart = b == '\n';
    }
    return java.util.Arrays.copyOf(out, n);
  }

  private static Result read(byte[] bytes) {
    String text = new String(bytes, 0, Math.min(bytes.length, MAX_BYTES), StandardCharsets.ISO_8859_1);
    String[] lines = text.split("\r?\n", -1);
    int[] at = {0};
    List<String[]> top = headers(lines, at);
    String contentType = field(top, "content-type");
    if (!isDeliveryStatusReport(contentType)) {
      return new Unparseable(NOT_A_REPORT);
    }
    String boundary = param(contentType, "boundary");
    if (boundary == null || boundary.isEmpty()) {
      return new Unparseable("multipart/report without a boundary");
    }
    String delimiter = "--" + boundary;
    String status = null;
    boolean statusBase64 = false;
    String returnedMessageId = null;
    int parts = 0;
    int i = at[0];
    // Skip the preamble up to the first delimiter.
    while (i < lines.length && !isDelimiter(lines[i], delimiter)) {
      i++;
    }
    while (i < lines.length && parts < MAX_PARTS) {
      String d = lines[i].stripTrailing();
      if (d.equals(delimiter + "--")) {
        break;
      }
      i++;
      parts++;
      at[0] = i;
      List<String[]> partHeaders = headers(lines, at);
      i = at[0];
      int start = i;
      while (i < lines.length && !isDelimiter(lines[i], delimiter)) {
        i++;
      }
      String type = field(partHeaders, "content-type");
      String bare = type == null ? "text/plain" : type.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
      if ((bare.equals("message/delivery-status") || bare.equals("message/global-delivery-status")) && status == null) {
        status = String.join("\n", java.util.Arrays.copyOfRange(lines, start, i));
        String cte = field(partHeaders, "content-transfer-encoding");
        statusBase64 = cte != null && cte.trim().equalsIgnoreCase("base64");
      } else if ((bare.equals("message/rfc822") || bare.equals("text/rfc822-headers") || bare.equals("message/global")
          || bare.equals("message/global-headers")) && returnedMessageId == null) {
        int[] from = {start};
        String[] body = java.util.Arrays.copyOfRange(lines, 0, i);
        List<String[]> returned = headers(body, from);
        String id = field(returned, "message-id");
        returnedMessageId = id == null || id.isBlank() ? null : cut(id.trim());
      }
    }
    if (status == null) {
      return new Unparseable("no message/delivery-status part");
    }
    if (statusBase64) {
      try {
        status = new String(Base64.getMimeDecoder().decode(status), StandardCharsets.ISO_8859_1);
      } catch (IllegalArgumentException e) {
        return new Unparseable("message/delivery-status part: bad base64");
      }
    }
    return fields(status, returnedMessageId);
  }

  /** The delivery-status part: a group of per-message fields, then one group per recipient, separated by empty lines. */
  private static Result fields(String status, String returnedMessageId) {
    List<List<String>> groups = new ArrayList<>();
    List<String> current = new ArrayList<>();
    for (String l : status.split("\r?\n", -1)) {
      if (l.isBlank()) {
        if (!current.isEmpty()) {
          groups.add(current);
          current = new ArrayList<>();
        }
      } else {
        current.add(l);
      }
    }
    if (!current.isEmpty()) {
      groups.add(current);
    }
    if (groups.size() < 2) {
      return new Unparseable("no per-recipient fields");
    }
    List<String[]> message = unfold(groups.get(0));
    List<Recipient> recipients = new ArrayList<>();
    for (int g = 1; g < groups.size() && recipients.size() < MAX_RECIPIENTS; g++) {
      List<String[]> f = unfold(groups.get(g));
      String action = field(f, "action");
      if (action == null || action.isBlank()) {
        continue;
      }
      String code = field(f, "status");
      Matcher m = code == null ? null : STATUS.matcher(code.trim());
      recipients.add(new Recipient(address(field(f, "final-recipient")), address(field(f, "original-recipient")),
          action.trim().split("[\\s(]", 2)[0].toLowerCase(Locale.ROOT), m != null && m.find() ? m.group() : null,
          typed(field(f, "remote-mta")), typed(field(f, "diagnostic-code")), date(field(f, "last-attempt-date")),
          cut(String.join("\n", groups.get(g)))));
    }
    if (recipients.isEmpty()) {
      return new Unparseable("no recipient with an Action");
    }
    String envid = field(message, "original-envelope-id");
    return new Report(envid == null || envid.isBlank() ? null : cut(envid.trim()), typed(field(message, "reporting-mta")),
        date(field(message, "arrival-date")), List.copyOf(recipients), returnedMessageId);
  }

  private static boolean isDelimiter(String line, String delimiter) {
    return line.startsWith(delimiter) && line.substring(delimiter.length()).isBlank()
        || line.stripTrailing().equals(delimiter + "--");
  }

  /** A header block from {@code at[0]} to its empty line (or the end), unfolded; {@code at[0]} is left after it. */
  private static List<String[]> headers(String[] lines, int[] at) {
    List<String> block = new ArrayList<>();
    int i = at[0];
    while (i < lines.length && !lines[i].isEmpty() && block.size() < 1000) {
      block.add(lines[i]);
      i++;
    }
    while (i < lines.length && !lines[i].isEmpty()) {
      i++;
    }
    at[0] = Math.min(lines.length, i + 1);
    return unfold(block);
  }

  /** Fields as name (lower case) and value, folded lines joined to the field before them. */
  private static List<String[]> unfold(List<String> lines) {
    List<String[]> out = new ArrayList<>();
    for (String l : lines) {
      if ((l.startsWith(" ") || l.startsWith("\t")) && !out.isEmpty()) {
        String[] last = out.get(out.size() - 1);
        if (last[1].length() < MAX_VALUE) {
          last[1] = last[1] + " " + l.trim();
        }
        continue;
      }
      int colon = l.indexOf(':');
      if (colon <= 0) {
        continue; // not a field: skipped
      }
      out.add(new String[] {l.substring(0, colon).trim().toLowerCase(Locale.ROOT), l.substring(colon + 1).trim()});
    }
    return out;
  }

  private static String field(List<String[]> fields, String name) {
    for (String[] f : fields) {
      if (f[0].equals(name)) {
        return f[1];
      }
    }
    return null;
  }

  /** A Content-Type parameter's value (quotes removed), or null. */
  static String param(String contentType, String name) {
    Matcher m = PARAM.matcher(contentType);
    while (m.find()) {
      if (m.group(1).equalsIgnoreCase(name)) {
        return m.group(3) != null ? m.group(3).replaceAll("\\\\(.)", "$1") : m.group(2);
      }
    }
    return null;
  }

  /** {@code type; value}: the value (what follows the first semicolon, else all), trimmed and cut; null when empty. */
  private static String typed(String v) {
    if (v == null) {
      return null;
    }
    int semi = v.indexOf(';');
    String value = (semi < 0 ? v : v.substring(semi + 1)).trim();
    return value.isEmpty() ? null : cut(value);
  }

  /** An address field ({@code rfc822; <a@b>}): the address, angle brackets removed. */
  private static String address(String v) {
    String a = typed(v);
    if (a == null) {
      return null;
    }
    if (a.startsWith("<") && a.endsWith(">") && a.length() > 2) {
      a = a.substring(1, a.length() - 1);
    }
    return a.isBlank() ? null : a;
  }

  /** An RFC 5322 date ({@code Fri,  4 Dec 2026 21:00:00 +0000 (UTC)}), or null when it cannot be read. */
  private static Instant date(String v) {
    if (v == null) {
      return null;
    }
    String s = v.replaceAll("\\([^)]*\\)", " ").trim().replaceAll("\\s+", " ");
    try {
      return ZonedDateTime.parse(s, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static String cut(String s) {
    return s.length() > MAX_VALUE ? s.substring(0, MAX_VALUE) : s;
  }
}
