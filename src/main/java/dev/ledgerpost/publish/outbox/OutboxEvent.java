package dev.ledgerpost.publish.outbox;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * One published outbox event as subscribers see it. {@code pubSeq} is the hub's sequence (gap-free,
 * resumable); {@code eventId} is stable ({@code <message id>:<version>}); {@code payload} is JSON text.
 * {@code authUser} decides which per-user subscribers may see it.
 */
public record OutboxEvent(
    long pubSeq, String eventId, UUID messageId, String type, String payload, String authUser, OffsetDateTime createdAt) {}
