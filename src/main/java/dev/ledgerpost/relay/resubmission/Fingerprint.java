package dev.ledgerpost.relay.resubmission;

import dev.ledgerpost.relay.MessageData;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Collection;
import java.util.TreeSet;
import java.util.UUID;

/**
 * What makes a submission the same message as an earlier one (docs/contract.md §1.13): who sent it (the AUTH user, or
 * without AUTH the relay-network rule that let the client in), its one Message-ID, its envelope (MAIL FROM and the set
 * of accepted RCPT addresses) and the SHA-256 of its bytes as the client sent them. The ledger keeps the first 128 bits
 * of the SHA-256 of these, as a uuid value, never the parts: half the key of a full digest, so the claims' unique index,
 * whose keys land on random pages, is half as large (two of a billion claims share one by chance with a probability
 * near 10^-21). Every field goes in with its length, so no two different submissions share an input.
 */
public final class Fingerprint {
  private Fingerprint() {}

  /**
   * The fingerprint, or null when the message cannot be recognised again: no Message-ID or more than one, or nobody to
   * scope it to (a submission that is neither authenticated nor let in by a relay network).
   *
   * @param scope {@code user:<name>} or {@code network:<cidr>}, from {@link #scope}
   */
  public static UUID of(String scope, MessageData message, String mailFrom, Collection<String> recipients) {
    if (scope == null || message.messageIdHeaders() != 1 || message.messageIdHeader() == null || recipients.isEmpty()) {
      return null;
    }
    MessageDigest d = MessageData.newSha256();
    byte[] scratch = new byte[128];
    scratch = field(d, "ledgerpost-resubmission-v1", scratch);
    scratch = field(d, scope, scratch);
    scratch = field(d, message.messageIdHeader(), scratch);
    scratch = field(d, mailFrom, scratch);
    // A set: the order of the RCPTs and repeats do not matter (one recipient, nearly all mail, is a set already).
    Collection<String> set = recipients.size() == 1 ? recipients : new TreeSet<>(recipients);
    scratch = field(d, Integer.toString(set.size()), scratch);
    for (String r : set) {
      scratch = field(d, r, scratch);
    }
    field(d, message.sha256(), scratch);
    ByteBuffer digest = ByteBuffer.wrap(d.digest());
    return new UUID(digest.getLong(), digest.getLong());
  }

  /**
   * Whose mail it is: the AUTH user when there is one, else the relay-network rule the client's address matched, else
   * null (no scope: never recognised, so one tenant can never make another's mail look like a duplicate).
   */
  public static String scope(String authUser, String relayRule) {
    if (authUser != null) {
      return "user:" + authUser;
    }
    return relayRule == null ? null : "network:" + relayRule;
  }

  /**
   * Hashes {@code <UTF-8 byte count>:<UTF-8 bytes>}. An ASCII value (nearly every one) is written with its count into
   * {@code scratch} and hashed in one update: no encoded copy and no count String per field (issue 33); any other is
   * encoded as before. Returns the scratch to go on with (a larger one when a value outgrew it).
   */
  static byte[] field(MessageDigest d, String value, byte[] scratch) {
    int n = value.length();
    for (int i = 0; i < n; i++) {
      if (value.charAt(i) >= 0x80) {
        byte[] b = value.getBytes(StandardCharsets.UTF_8);
        d.update(Integer.toString(b.length).getBytes(StandardCharsets.US_ASCII));
        d.update((byte) ':');
        d.update(b);
        return scratch;
      }
    }
    byte[] out = scratch.length >= n + 11 ? scratch : new byte[n + 11]; // 10 digits of an int and the colon
    int p = 0;
    if (n == 0) {
      out[p++] = '0';
    } else {
      int divisor = 1;
      while (divisor <= n / 10) {
        divisor *= 10;
      }
      for (; divisor > 0; divisor /= 10) {
        out[p++] = (byte) ('0' + (n / divisor) % 10);
      }
    }
    out[p++] = ':';
    for (int i = 0; i < n; i++) {
      out[p++] = (byte) value.charAt(i);
    }
    d.update(out, 0, p);
    return out;
  }
}
