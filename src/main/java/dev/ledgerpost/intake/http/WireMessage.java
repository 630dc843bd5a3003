package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.MessageData;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * Turns a message (RFC 5322 bytes, CRLF line endings) into what the relay sends after DATA: the same
 * lines dot-stuffed, without the terminating dot. It refuses what the SMTP intake refuses: bare CR or
 * LF (SMTP smuggling), lines over 998 octets, messages over the size limit.
 */
public final class WireMessage {
  /** RFC 5321 §4.5.3.1.6: 1000 octets with the CRLF. */
  static final int MAX_LINE = 998;
  private static final int MAX_HEADER_SCAN = 256 * 1024;

  private WireMessage() {}

  /** @param field the request member the bytes came from, for the problem report */
  public static MessageData of(byte[] message, long maxSize, String field) {
    int length = message.length;
    boolean appendCrlf = length > 0 && !(length >= 2 && message[length - 2] == '\r' && message[length - 1] == '\n');
    long size = length + (appendCrlf ? 2 : 0);
    if (length == 0) {
      throw InvalidSend.unprocessable(field, "the message is empty");
    }
    if (size > maxSize) {
      throw new InvalidSend(413, field, "the message is " + size + " bytes; the limit is " + maxSize);
    }
    MessageDigest sha256 = MessageData.newSha256();
    Buffer wire = Buffer.buffer(length + length / 64 + 16);
    int lineStart = 0;
    int lineNo = 1;
    for (int i = 0; i < length; i++) {
      byte b = message[i];
      if (b == '\r') {
        if (i + 1 >= length) {
          break; // a final lone CR: refused below as a bare CR
        }
        if (message[i + 1] != '\n') {
          throw bareLineEnding(field, lineNo);
        }
        line(message, lineStart, i, wire, field, lineNo);
        i++;
        lineStart = i + 1;
        lineNo++;
      } else if (b == '\n') {
        throw bareLineEnding(field, lineNo);
      }
    }
    if (lineStart < length) {
      if (message[length - 1] == '\r') {
        throw bareLineEnding(field, lineNo);
      }
      // No CRLF after the last line: added, as every SMTP client does before the final dot.
      line(message, lineStart, length, wire, field, lineNo);
    }
    sha256.update(message);
    if (appendCrlf) {
      sha256.update(new byte[] {'\r', '\n'});
    }
    return new MessageData(wire, size, HexFormat.of().formatHex(sha256.digest()), messageId(message));
  }

  private static void line(byte[] m, int from, int to, Buffer wire, String field, int lineNo) {
    if (to - from > MAX_LINE) {
      throw InvalidSend.unprocessable(field, "line " + lineNo + " is longer than " + MAX_LINE + " octets (RFC 5322 §2.1.1)");
    }
    if (to > from && m[from] == '.') {
      wire.appendByte((byte) '.'); // RFC 5321 §4.5.2 transparency
    }
    wire.appendBytes(m, from, to - from).appendBytes(new byte[] {'\r', '\n'});
  }

  private static InvalidSend bareLineEnding(String field, int lineNo) {
    return InvalidSend.unprocessable(field, "bare CR or LF in line " + lineNo + "; lines must end with CRLF");
  }

  /** The Message-ID header's value (unfolded, trimmed), or null; only the header block is read. */
  static String messageId(byte[] message) {
    int end = Math.min(message.length, MAX_HEADER_SCAN);
    String head = new String(message, 0, end, StandardCharsets.UTF_8);
    int blank = head.indexOf("\r\n\r\n");
    if (blank >= 0) {
      head = head.substring(0, blank);
    }
    return MessageData.messageId(head.split("\r\n"));
  }

  /** Whether any byte has the high bit set (the downstream is then asked for BODY=8BITMIME). */
  static boolean eightBit(byte[] message) {
    for (byte b : message) {
      if (b < 0) {
        return true;
      }
    }
    return false;
  }
}
