package dev.ledgerpost.intake.http;

import dev.ledgerpost.intake.http.SendRequest.Attachment;
import dev.ledgerpost.intake.http.SendRequest.Composed;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.mail.MailAttachment;
import io.vertx.ext.mail.MailMessage;
import io.vertx.ext.mail.mailencoder.EncodedPart;
import io.vertx.ext.mail.mailencoder.MailEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * Builds the MIME message of a composed send with vertx-mail-client's encoder (docs/contract.md §1.2): multipart
 * structure, quoted-printable and base64 bodies, RFC 2047 subjects and names, MIME-Version, Date, and a
 * Message-ID made of the operation id unless the client gave its own.
 *
 * <p>The encoder's {@code encode()} string omits the closing multipart delimiter (its mail client adds
 * it while streaming), so the parts it builds are written out here the way that client writes them.
 */
public final class MimeComposer {
  private MimeComposer() {}

  /** The message as RFC 5322 bytes with CRLF line endings. */
  public static byte[] compose(Composed c, String messageId, String hostname) {
    MailMessage m = new MailMessage()
        .setFrom(c.from())
        .setSubject(c.subject());
    if (!c.to().isEmpty()) {
      m.setTo(c.to());
    }
    if (!c.cc().isEmpty()) {
      m.setCc(c.cc());
    }
    if (c.text() != null) {
      m.setText(unixLines(c.text()));
    }
    if (c.html() != null) {
      m.setHtml(unixLines(c.html()));
    }
    List<MailAttachment> attachments = new ArrayList<>();
    for (Attachment a : c.attachments()) {
      attachments.add(MailAttachment.create()
          .setData(Buffer.buffer(a.content()))
          .setName(a.filename())
          .setContentType(a.contentType()));
    }
    m.setAttachment(attachments);
    MultiMap headers = MultiMap.caseInsensitiveMultiMap();
    headers.set("Message-ID", messageId);
    for (Map.Entry<String, String> h : c.headers().entrySet()) {
      headers.set(h.getKey(), encodedWords(h.getValue()));
    }
    m.setHeaders(headers); // the encoder lets these replace its own, so a client's Message-ID wins
    EncodedPart part = new MailEncoder(m, hostname).encodeMail();
    StringBuilder sb = new StringBuilder();
    write(part, sb, false);
    return crlf(sb).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * In a multipart body the line break before a boundary belongs to the boundary (RFC 2046 §5.1.1), so a
   * part always gets one more: a text that ends with a line break keeps it.
   */
  private static void write(EncodedPart part, StringBuilder sb, boolean inMultipart) {
    part.headers().forEach(h -> sb.append(h.getKey()).append(": ").append(h.getValue()).append('\n'));
    sb.append('\n');
    if (part.parts() != null && !part.parts().isEmpty()) {
      for (EncodedPart child : part.parts()) {
        sb.append("--").append(part.boundary()).append('\n');
        write(child, sb, true);
      }
      sb.append("--").append(part.boundary()).append("--\n");
    } else {
      String body = part.body() == null ? "" : part.body();
      sb.append(body);
      if (inMultipart || !body.endsWith("\n")) {
        sb.append('\n');
      }
    }
  }

  /**
   * The encoder mixes LF (bodies, header ends) and CRLF (folded headers); the wire wants CRLF only. A
   * lone CR becomes CRLF too: none should reach here (the request's fields are refused with CR or LF,
   * bodies go through {@link #unixLines}, the encoder encodes CR elsewhere), but what this composer
   * writes must never hold a bare CR or LF whatever the encoder does (vertx-mail-client once folded
   * headers with a bare LF), rather than be refused for it further on.
   */
  static String crlf(CharSequence text) {
    return text.toString().replace("\r\n", "\n").replace('\r', '\n').replace("\n", "\r\n");
  }

  /** Text bodies arrive with whatever line endings the client's platform uses. */
  private static String unixLines(String text) {
    return text.replace("\r\n", "\n").replace('\r', '\n');
  }

  /**
   * RFC 2047 B-encoding for a custom header with non-ASCII text, in words of at most 45 octets of UTF-8
   * (a 72-character word) folded onto continuation lines. ASCII values pass unchanged.
   */
  static String encodedWords(String value) {
    if (value.chars().allMatch(ch -> ch >= 0x20 && ch < 0x7f || ch == '\t')) {
      return value;
    }
    List<String> words = new ArrayList<>();
    StringBuilder chunk = new StringBuilder();
    int octets = 0;
    for (int i = 0; i < value.length(); ) {
      int cp = value.codePointAt(i);
      String ch = new String(Character.toChars(cp));
      int n = ch.getBytes(StandardCharsets.UTF_8).length;
      if (octets + n > 45) {
        words.add(word(chunk.toString()));
        chunk.setLength(0);
        octets = 0;
      }
      chunk.append(ch);
      octets += n;
      i += Character.charCount(cp);
    }
    if (chunk.length() > 0) {
      words.add(word(chunk.toString()));
    }
    return String.join("\r\n ", words);
  }

  private static String word(String text) {
    return "=?UTF-8?B?" + Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8)) + "?=";
  }
}
