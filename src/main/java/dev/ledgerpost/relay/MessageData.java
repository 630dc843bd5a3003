package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.MessageTags;
import io.vertx.core.buffer.Buffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * A received message ready to relay. {@code wire} holds it as {@code form} says, so relaying it changes no
 * byte. {@code size} and {@code sha256} describe the message itself (unstuffed). {@code messageIdHeaders} counts its
 * Message-ID header lines: only a message with exactly one can be recognised as a resubmission (docs/contract.md §1.13).
 * {@code tags} are its tags and metadata (docs/data-model.md §5.17), recorded by the open; never null.
 */
public record MessageData(Buffer wire, long size, String sha256, String messageIdHeader, Form form, int messageIdHeaders,
    MessageTags tags) {

  public MessageData {
    tags = tags == null ? MessageTags.NONE : tags;
  }

  public MessageData(Buffer wire, long size, String sha256, String messageIdHeader, Form form, int messageIdHeaders) {
    this(wire, size, sha256, messageIdHeader, form, messageIdHeaders, MessageTags.NONE);
  }

  /** The same message with these tags and metadata. */
  public MessageData withTags(MessageTags t) {
    return new MessageData(wire, size, sha256, messageIdHeader, form, messageIdHeaders, t);
  }

  /** How {@code wire} holds the message, and so how it may go downstream. */
  public enum Form {
    /** DATA's wire form: the client's lines as they crossed the socket, CRLF-terminated, still dot-stuffed, without the terminating dot line. Goes down as DATA. */
    DOT_STUFFED,
    /** The message itself (BDAT), every line ending in CRLF, the last one too: down as BDAT, or as DATA once dot-stuffed. */
    LINES,
    /** The message itself (BDAT), not fit for DATA (BODY=BINARYMIME, or a last line without CRLF): down as BDAT only. */
    CHUNKS_ONLY
  }

  /** DATA's wire form (the SMTP DATA intake, the send API). */
  public MessageData(Buffer wire, long size, String sha256, String messageIdHeader) {
    this(wire, size, sha256, messageIdHeader, Form.DOT_STUFFED);
  }

  /** One Message-ID header when there is a value, none when not. */
  public MessageData(Buffer wire, long size, String sha256, String messageIdHeader, Form form) {
    this(wire, size, sha256, messageIdHeader, form, messageIdHeader == null ? 0 : 1);
  }

  /** A fresh SHA-256, the digest of {@code sha256} and of the sent bytes' hash (every JDK has it). */
  public static MessageDigest newSha256() {
    try {
      return (MessageDigest) SHA256.clone();
    } catch (CloneNotSupportedException e) {
      return sha256Instance();
    }
  }

  /**
   * Never updated, only cloned: a clone is a fresh digest without the provider look-up of {@code getInstance}, done a
   * few times a message (issue 33). A clone only reads this one, so clones on several threads at once are safe.
   */
  private static final MessageDigest SHA256 = sha256Instance();

  private static MessageDigest sha256Instance() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }

  /** At most this much of a Message-ID is recorded: a line's limit (RFC 5322 §2.1.1). */
  private static final int MAX_MESSAGE_ID = 998;

  /**
   * The Message-ID header's value among a message's header lines (unfolded, trimmed, at most 998 characters), or
   * null; SMTP and the send API read it the same way.
   */
  public static String messageId(String[] headerLines) {
    for (int i = 0; i < headerLines.length; i++) {
      String l = headerLines[i];
      if (isMessageId(l)) {
        StringBuilder v = new StringBuilder(l.substring(11));
        while (i + 1 < headerLines.length && !headerLines[i + 1].isEmpty()
            && (headerLines[i + 1].charAt(0) == ' ' || headerLines[i + 1].charAt(0) == '\t')) {
          v.append(headerLines[++i]);
        }
        String value = v.toString().trim();
        return value.length() > MAX_MESSAGE_ID ? value.substring(0, MAX_MESSAGE_ID) : value;
      }
    }
    return null;
  }

  /** How many Message-ID header fields a message's header lines hold (RFC 5322 allows one; some clients write two). */
  public static int messageIdCount(String[] headerLines) {
    int n = 0;
    for (String l : headerLines) {
      if (isMessageId(l)) {
        n++;
      }
    }
    return n;
  }

  /** A header line that begins a Message-ID field (its name in any case). */
  /**
   * Whether the line starts with "Message-ID:" in any case of its ASCII letters. Compared in place (issue 33: a
   * substring and its lower-case copy for every header line); no other character lower-cases to one of these alone.
   */
  private static boolean isMessageId(String headerLine) {
    if (headerLine.length() < MESSAGE_ID.length()) {
      return false;
    }
    for (int i = 0; i < MESSAGE_ID.length(); i++) {
      char c = headerLine.charAt(i);
      if ((c >= 'A' && c <= 'Z' ? (char) (c + 32) : c) != MESSAGE_ID.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private static final String MESSAGE_ID = "message-id:";
}
