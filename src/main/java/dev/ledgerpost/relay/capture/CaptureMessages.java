package dev.ledgerpost.relay.capture;

import java.time.OffsetDateTime;
import java.util.UUID;

/** Capture mode's addresses, served on its own verticle ({@link CaptureVerticle}; docs/design.md §8.10). */
public final class CaptureMessages {
  public static final String GET = "capture.get";
  public static final String PRUNE = "capture.prune";

  private CaptureMessages() {}

  /**
   * One captured message's bytes. {@code user} null: the admin token asks, and sees every capture; else only that user's
   * (a send key's own): another user's answers NOT_FOUND, as one that never was.
   */
  public record Get(UUID id, String user) {}

  /**
   * A captured message: the message as the client gave it (unstuffed, without the gateway's Received: line), who sent
   * it, when it was kept and until when.
   */
  public record Captured(UUID id, String user, long size, OffsetDateTime capturedAt, OffsetDateTime expiresAt,
      byte[] body) {}

  /** Delete up to {@code limit} captures past their expires_at. */
  public record Prune(int limit) {}

  public record Pruned(int deleted) {}
}
