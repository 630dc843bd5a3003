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
    field(d, "ledgerpost-resubmission-v1");
    field(d, scope);
    field(d, message.messageIdHeader());
    field(d, mailFrom);
    TreeSet<String> set = new TreeSet<>(recipients); // a set: the order of the RCPTs and repeats do not matter
    field(d, Integer.toString(set.size()));
    for (String r : set) {
      field(d, r);
    }
    field(d, message.sha256());
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

  private static void field(MessageDigest d, String value) {
    byte[] b = value.getBytes(StandardCharsets.UTF_8);
    d.update(Integer.toString(b.length).getBytes(StandardCharsets.US_ASCII));
    d.update((byte) ':');
    d.update(b);
  }
}
