package dev.ledgerpost.platform.bus;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;

/**
 * Passes an immutable record through the local event bus by reference. The gateway runs in one JVM;
 * refusing the wire form makes an accidental clustered deployment fail loudly instead of silently
 * serialising half a message.
 */
final class LocalCodec<T> implements MessageCodec<T, T> {
  private final Class<T> type;

  LocalCodec(Class<T> type) {
    this.type = type;
  }

  @Override
  public void encodeToWire(Buffer buffer, T value) {
    throw new UnsupportedOperationException(type.getName() + " is a local-only event-bus message");
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    throw new UnsupportedOperationException(type.getName() + " is a local-only event-bus message");
  }

  @Override
  public T transform(T value) {
    return value;
  }

  @Override
  public String name() {
    return "local:" + type.getName();
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
