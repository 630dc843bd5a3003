package dev.ledgerpost.platform.db;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * Ledger ids are UUIDv7 (RFC 9562): time-ordered, so new rows land at the end of the primary-key
 * index instead of all over it, and an id says roughly when it was issued.
 */
public final class LedgerIds {
  private static final SecureRandom RANDOM = new SecureRandom();
  /** A ledger id as the API takes one (openapi.yaml's MessageId): a UUID in its 8-4-4-4-12 hex form, any case. */
  private static final java.util.regex.Pattern TEXT =
      java.util.regex.Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  /** What a ledger id looks like, for people who typed something else (a UUIDv7, as the gateway issues them). */
  public static final String EXAMPLE = "0193a5c2-7c1e-7d4a-9b1e-3f2a1c4b5d6e";

  private LedgerIds() {}

  /** The smallest id issued at or after {@code t}: a lower bound for every id of a later message. */
  public static UUID lowest(java.time.Instant t) {
    return new UUID((t.toEpochMilli() << 16) | 0x7000L, 0x8000000000000000L);
  }

  /** When a UUIDv7 id was issued (its 48-bit millisecond timestamp); empty for any other version. */
  public static java.util.Optional<java.time.Instant> time(UUID id) {
    return id.version() == 7 ? java.util.Optional.of(instant(id)) : java.util.Optional.empty();
  }

  /** The instant in an id's first 48 bits, whatever its version: the time an id bound (from {@link #lowest}) stands for. */
  public static java.time.Instant instant(UUID id) {
    return java.time.Instant.ofEpochMilli(id.getMostSignificantBits() >>> 16);
  }

  /** Whether {@code text} is a ledger id as the API takes one. */
  public static boolean isLedgerId(String text) {
    return text != null && TEXT.matcher(text).matches();
  }

  /**
   * The one sentence for an id that is not one, the API's (a 400's detail) and the CLI's alike: what was given (cut at
   * 80 characters) and what a ledger id looks like.
   */
  public static String notALedgerId(String given) {
    String shown = given == null ? "" : given.length() > 80 ? given.substring(0, 80) + "…" : given;
    return "not a ledger id: " + shown + " (a ledger id is a UUID such as " + EXAMPLE
        + ", as in the 250 reply's \"queued as\" or `ledgerpost messages list`)";
  }

  public static UUID next() {
    long millis = System.currentTimeMillis();
    byte[] r = new byte[10];
    RANDOM.nextBytes(r);
    long msb = (millis << 16) | 0x7000L | ((r[0] & 0x0FL) << 8) | (r[1] & 0xFFL);
    long lsb = 0x8000000000000000L | ((r[2] & 0x3FL) << 56);
    for (int i = 3; i < 10; i++) {
      lsb |= (r[i] & 0xFFL) << (8 * (9 - i));
    }
    return new UUID(msb, lsb);
  }
}
