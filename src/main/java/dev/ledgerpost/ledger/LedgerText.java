package dev.ledgerpost.ledger;

/**
 * Text as the ledger can store it. PostgreSQL text cannot hold U+0000, and a client can put a NUL byte
 * in a HELO argument or a Message-ID header (a smarthost in its reply text): written as it is, the
 * statement fails with 22021 and a message the gateway accepted could never be recorded, so its client
 * would hear 451 4.3.0 for as long as it retried. Recorded fields are information about the message, not
 * the message (its bytes go downstream untouched, and its size and SHA-256 are of those bytes): a NUL is
 * recorded as U+FFFD, the replacement character.
 */
final class LedgerText {
  private LedgerText() {}

  static String storable(String s) {
    return s == null || s.indexOf('\0') < 0 ? s : s.replace('\0', '\uFFFD');
  }
}
