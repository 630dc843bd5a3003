package dev.ledgerpost.delivery;

import io.vertx.core.buffer.Buffer;

/**
 * A received message ready to relay. {@code wire} holds the client's lines exactly as they crossed
 * the socket (CRLF-terminated, still dot-stuffed, without the terminating dot line), so relaying it
 * changes no byte. {@code size} and {@code sha256} describe the message itself (unstuffed).
 */
public record MessageData(Buffer wire, long size, String sha256, String messageIdHeader) {}
