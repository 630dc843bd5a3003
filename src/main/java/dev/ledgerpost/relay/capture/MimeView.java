package dev.ledgerpost.relay.capture;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A captured message read for people (the API's parsed form, the console): its header fields (RFC 2047 words decoded),
 * the first text/plain and text/html parts (transfer encoding and charset undone), and every other leaf part as an
 * attachment with its name, type and decoded size. A reader, never a validator: whatever it cannot make sense of is
 * shown as it is, and the raw form stays byte-exact next to it. Works on the bytes as ISO-8859-1 text, one char per byte,
 * so the structure is found without guessing a charset and each part's bytes come back unchanged.
 */
public record MimeView(List<Header> headers, String text, String html, List<Attachment> attachments) {
  /** Parts nested deeper than this are listed, not opened (a message is not a place for recursion bombs). */
  private static final int MAX_DEPTH = 20;
  private static final Pattern ENCODED_WORD = Pattern.compile("=\\?([^?]+)\\?([bBqQ])\\?([^?]*)\\?=");

  public record Header(String name, String value) {}

  public record Attachment(String name, String type, long size) {}

  /** The first value of a header field (case-insensitive name), or null. */
  public String header(String name) {
    for (Header h : headers) {
      if (h.name().equalsIgnoreCase(name)) {
        return h.value();
      }
    }
    return null;
  }

  public static MimeView parse(byte[] message) {
    String all = new String(message, StandardCharsets.ISO_8859_1);
    Part top = Part.of(all);
    Builder b = new Builder();
    b.walk(top, 0);
    List<Header> headers = new ArrayList<>();
    top.headers.forEach(h -> headers.add(new Header(h.name(), decodeWords(h.value()))));
    return new MimeView(List.copyOf(headers), b.text, b.html, List.copyOf(b.attachments));
  }

  private static final class Builder {
    String text;
    String html;
    final List<Attachment> attachments = new ArrayList<>();

    void walk(Part p, int depth) {
      ContentType ct = p.contentType();
      if (ct.type.startsWith("multipart/") && ct.params.containsKey("boundary") && depth < MAX_DEPTH) {
        for (Part child : p.children(ct.params.get("boundary"))) {
          walk(child, depth + 1);
        }
        return;
      }
      String disposition = p.value("Content-Disposition");
      ContentType cd = disposition == null ? null : ContentType.parse(disposition);
      ContentType named = cd != null && cd.params.containsKey("filename") ? cd : ct;
      String key = named == cd ? "filename" : "name";
      String name = named.params.get(key);
      if (name != null && !named.extended.contains(key)) {
        name = decodeWords(name); // an RFC 2231 value is decoded already; anything else may hold RFC 2047 words
      }
      boolean attached = cd != null && cd.type.equals("attachment");
      byte[] decoded = p.decoded();
      if (!attached && name == null && ct.type.equals("text/plain") && text == null) {
        text = charset(ct).decode(java.nio.ByteBuffer.wrap(decoded)).toString();
      } else if (!attached && name == null && ct.type.equals("text/html") && html == null) {
        html = charset(ct).decode(java.nio.ByteBuffer.wrap(decoded)).toString();
      } else {
        attachments.add(new Attachment(name, ct.type, decoded.length));
      }
    }
  }

  /** One entity: header fields (unfolded, values as given) and its body, both as ISO-8859-1 text. */
  private record Part(List<Header> headers, String body) {
    static Part of(String entity) {
      int end = indexOfBlankLine(entity);
      String head = end < 0 ? entity : entity.substring(0, end);
      String body = end < 0 ? "" : entity.substring(end).replaceFirst("^\r?\n\r?\n|^\r?\n", "");
      List<Header> headers = new ArrayList<>();
      for (String line : head.split("\r?\n")) {
        if (line.isEmpty()) {
          continue;
        }
        if ((line.charAt(0) == ' ' || line.charAt(0) == '\t') && !headers.isEmpty()) {
          Header last = headers.remove(headers.size() - 1);
          headers.add(new Header(last.name(), last.value() + " " + line.trim()));
          continue;
        }
        int colon = line.indexOf(':');
        if (colon > 0) {
          headers.add(new Header(line.substring(0, colon).trim(), line.substring(colon + 1).trim()));
        }
      }
      return new Part(headers, body);
    }

    /** Where the header ends: the line break before the first empty line (-1: none, all header). */
    private static int indexOfBlankLine(String s) {
      if (s.startsWith("\r\n") || s.startsWith("\n")) {
        return 0;
      }
      Matcher m = Pattern.compile("\r?\n\r?\n").matcher(s);
      return m.find() ? m.start() : -1;
    }

    String value(String name) {
      for (Header h : headers) {
        if (h.name().equalsIgnoreCase(name)) {
          return h.value();
        }
      }
      return null;
    }

    ContentType contentType() {
      String v = value("Content-Type");
      return v == null ? ContentType.parse("text/plain") : ContentType.parse(v);
    }

    /** The parts between the boundary's delimiter lines (RFC 2046 §5.1.1); preamble and epilogue dropped. */
    List<Part> children(String boundary) {
      List<Part> parts = new ArrayList<>();
      String delimiter = "--" + boundary;
      String[] lines = body.split("(?<=\n)");
      StringBuilder current = null;
      for (String line : lines) {
        String bare = line.replaceAll("[\r\n]+$", "");
        if (bare.startsWith(delimiter)) {
          String rest = bare.substring(delimiter.length()).trim();
          if (current != null) {
            parts.add(Part.of(stripLastBreak(current)));
          }
          current = rest.startsWith("--") ? null : new StringBuilder();
          if (rest.startsWith("--")) {
            break;
          }
          continue;
        }
        if (current != null) {
          current.append(line);
        }
      }
      if (current != null) {
        parts.add(Part.of(stripLastBreak(current)));
      }
      return parts;
    }

    /** The line break before a delimiter belongs to the delimiter (RFC 2046 §5.1.1). */
    private static String stripLastBreak(StringBuilder b) {
      String s = b.toString();
      return s.endsWith("\r\n") ? s.substring(0, s.length() - 2) : s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
    }

    /** The body's bytes with its Content-Transfer-Encoding undone (base64, quoted-printable; else as they are). */
    byte[] decoded() {
      String cte = value("Content-Transfer-Encoding");
      String encoding = cte == null ? "" : cte.trim().toLowerCase(Locale.ROOT);
      byte[] raw = body.getBytes(StandardCharsets.ISO_8859_1);
      try {
        return switch (encoding) {
          case "base64" -> Base64.getMimeDecoder().decode(raw);
          case "quoted-printable" -> quotedPrintable(body);
          default -> raw;
        };
      } catch (IllegalArgumentException e) {
        return raw; // shown as it is, never refused: the raw form is the truth
      }
    }
  }

  /** {@code type/subtype} lower-cased and its parameters (names lower-cased; quoted values unquoted; RFC 2231 {@code name*}). */
  private record ContentType(String type, Map<String, String> params, java.util.Set<String> extended) {
    static ContentType parse(String value) {
      String[] pieces = value.split(";(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)");
      Map<String, String> params = new LinkedHashMap<>();
      java.util.Set<String> extended = new java.util.HashSet<>();
      for (int i = 1; i < pieces.length; i++) {
        int eq = pieces[i].indexOf('=');
        if (eq < 0) {
          continue;
        }
        String name = pieces[i].substring(0, eq).trim().toLowerCase(Locale.ROOT);
        String v = pieces[i].substring(eq + 1).trim();
        if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
          v = v.substring(1, v.length() - 1).replaceAll("\\\\(.)", "$1");
        }
        if (name.endsWith("*")) { // RFC 2231: charset'language'percent-encoded
          name = name.substring(0, name.length() - 1);
          v = rfc2231(v);
          if (!params.containsKey(name) || !extended.contains(name)) {
            params.put(name, v); // the extended form wins over a plain one (RFC 2231 §4)
            extended.add(name);
          }
          continue;
        }
        params.putIfAbsent(name, v);
      }
      return new ContentType(pieces[0].trim().toLowerCase(Locale.ROOT), params, extended);
    }
  }

  private static Charset charset(ContentType ct) {
    try {
      return Charset.forName(ct.params.getOrDefault("charset", "us-ascii"));
    } catch (RuntimeException e) {
      return StandardCharsets.UTF_8;
    }
  }

  static byte[] quotedPrintable(String s) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '=' && i + 1 < s.length() && (s.charAt(i + 1) == '\r' || s.charAt(i + 1) == '\n')) {
        i += s.charAt(i + 1) == '\r' && i + 2 < s.length() && s.charAt(i + 2) == '\n' ? 2 : 1; // soft line break
      } else if (c == '=' && i + 2 < s.length() && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
        out.write(hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2)));
        i += 2;
      } else {
        out.write(c);
      }
    }
    return out.toByteArray();
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }

  /** RFC 2047 encoded words in a header value, decoded; a word that cannot be is left as it is. */
  static String decodeWords(String value) {
    String unfolded = toUtf16(value).replaceAll("(\\?=)\\s+(=\\?)", "$1$2"); // white space between two words is not shown
    Matcher m = ENCODED_WORD.matcher(unfolded);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String decoded;
      try {
        Charset cs = Charset.forName(m.group(1).replaceAll("\\*.*$", ""));
        byte[] bytes = m.group(2).equalsIgnoreCase("B") ? Base64.getDecoder().decode(m.group(3))
            : quotedPrintable(m.group(3).replace('_', ' '));
        decoded = new String(bytes, cs);
      } catch (RuntimeException e) {
        decoded = m.group();
      }
      m.appendReplacement(out, Matcher.quoteReplacement(decoded));
    }
    m.appendTail(out);
    return out.toString();
  }

  /** A header's raw 8-bit bytes (SMTPUTF8 mail) were read one char per byte: read them again as UTF-8. */
  private static String toUtf16(String latin1) {
    for (int i = 0; i < latin1.length(); i++) {
      if (latin1.charAt(i) > 0x7F && latin1.charAt(i) <= 0xFF) {
        return new String(latin1.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
      }
    }
    return latin1;
  }

  private static String rfc2231(String v) {
    int first = v.indexOf('\'');
    int second = first < 0 ? -1 : v.indexOf('\'', first + 1);
    if (second < 0) {
      return v;
    }
    try {
      return java.net.URLDecoder.decode(v.substring(second + 1).replace("+", "%2B"), v.substring(0, first));
    } catch (RuntimeException | java.io.UnsupportedEncodingException e) {
      return v;
    }
  }
}
