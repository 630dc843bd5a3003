package dev.ledgerpost.delivery;

import io.vertx.core.buffer.Buffer;

/**
 * A received message ready to relay. {@code wire} holds it as {@code form} says, so relaying it changes no
 * byte. {@code size} and {@code sha256} describe the message itself (unstuffed).
 */
public record MessageData(Buffer wire, long size, String sha256, String messageIdHeader, Form form) {

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
}
