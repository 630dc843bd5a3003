package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.relay.MessageData;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * What makes two submissions the same message (docs/contract.md §1.13): the scope, the one Message-ID, MAIL FROM, the
 * set of accepted recipients and the SHA-256 of the bytes. Each of these, and only these, changes the fingerprint; a
 * submission that cannot be told apart from another's (no single Message-ID, nobody to scope it to) has none.
 */
class FingerprintTest {
  static final String NETWORK = Fingerprint.scope(null, "127.0.0.0/8");
  static final String FROM = "a@example.com";
  static final List<String> TO = List.of("b@example.net", "c@example.net");
  static final MessageData MESSAGE = message("<m1@example.com>", sha256("Subject: x\r\n\r\nbody\r\n"));

  static MessageData message(String messageId, String sha256) {
    return new MessageData(Buffer.buffer("Subject: x\r\n\r\nbody\r\n"), 21, sha256, messageId, MessageData.Form.DOT_STUFFED,
        messageId == null ? 0 : 1);
  }

  static String sha256(String text) {
    return HexFormat.of().formatHex(MessageData.newSha256().digest(text.getBytes(StandardCharsets.UTF_8)));
  }

  static String of(String scope, MessageData m, String from, List<String> to) {
    java.util.UUID fingerprint = Fingerprint.of(scope, m, from, to);
    return fingerprint == null ? null : fingerprint.toString();
  }

  @Test
  void theSameSubmissionHasTheSameFingerprintASha256Prefix() {
    java.util.UUID one = Fingerprint.of(NETWORK, MESSAGE, FROM, TO);
    assertThat(one).isNotNull();
    assertThat(Fingerprint.of(NETWORK, message("<m1@example.com>", MESSAGE.sha256()), FROM, List.copyOf(TO))).isEqualTo(one);
  }

  /** A client may send its RCPTs in another order on its retry, or one twice: the set of them is the envelope. */
  @Property(tries = 200)
  void theOrderAndRepeatsOfTheRecipientsDoNotMatter(@ForAll("recipients") List<String> to, @ForAll long seed) {
    Random random = new Random(seed);
    List<String> again = new ArrayList<>(to);
    for (String r : to) {
      if (random.nextBoolean()) {
        again.add(r); // said twice
      }
    }
    Collections.shuffle(again, random);
    assertThat(of(NETWORK, MESSAGE, FROM, again)).isEqualTo(of(NETWORK, MESSAGE, FROM, to)).isNotNull();
  }

  @Provide
  Arbitrary<List<String>> recipients() {
    return Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(8).map(local -> local + "@example.net")
        .list().uniqueElements().ofMinSize(1).ofMaxSize(10);
  }

  @Test
  void eachFieldChangesTheFingerprint() {
    Map<String, String> variants = new LinkedHashMap<>();
    variants.put("the submission", of(NETWORK, MESSAGE, FROM, TO));
    variants.put("another relay network", of(Fingerprint.scope(null, "127.0.0.2/32"), MESSAGE, FROM, TO));
    variants.put("an AUTH user", of(Fingerprint.scope("alice", null), MESSAGE, FROM, TO));
    variants.put("another AUTH user", of(Fingerprint.scope("bob", null), MESSAGE, FROM, TO));
    variants.put("another Message-ID", of(NETWORK, message("<m2@example.com>", MESSAGE.sha256()), FROM, TO));
    variants.put("a Message-ID in another case", of(NETWORK, message("<M1@example.com>", MESSAGE.sha256()), FROM, TO));
    variants.put("other bytes", of(NETWORK, message("<m1@example.com>", sha256("Subject: x\r\n\r\nbody!\r\n")), FROM, TO));
    variants.put("another sender", of(NETWORK, MESSAGE, "z@example.com", TO));
    variants.put("the null sender", of(NETWORK, MESSAGE, "", TO));
    variants.put("one recipient fewer", of(NETWORK, MESSAGE, FROM, List.of("b@example.net")));
    variants.put("one recipient more", of(NETWORK, MESSAGE, FROM, List.of("b@example.net", "c@example.net", "d@example.net")));
    variants.put("another recipient", of(NETWORK, MESSAGE, FROM, List.of("b@example.net", "d@example.net")));
    assertThat(variants.values()).doesNotContainNull();
    assertThat(Set.copyOf(variants.values())).as("%s", variants).hasSize(variants.size());
  }

  /**
   * Every field goes in with its length: bytes moved from one field into the next (the inputs would otherwise be the
   * same concatenation) make another fingerprint.
   */
  @Test
  void noFieldRunsIntoTheNext() {
    String sha = MESSAGE.sha256();
    assertThat(of("user:al", message("<m@x>", sha), FROM, TO)).as("scope, Message-ID")
        .isNotEqualTo(of("user:a", message("l<m@x>", sha), FROM, TO));
    assertThat(of(NETWORK, message("<m@x>", sha), "a@x", TO)).as("Message-ID, MAIL FROM")
        .isNotEqualTo(of(NETWORK, message("<m@x>a", sha), "@x", TO));
    assertThat(of(NETWORK, MESSAGE, FROM, List.of("b@x", "c@x"))).as("one recipient, the next")
        .isNotEqualTo(of(NETWORK, MESSAGE, FROM, List.of("b@xc@", "x")));
  }

  /** The SHA-256 is of the message itself, so DATA's dot-stuffed wire and BDAT's chunks of one message are one. */
  @Test
  void theWireFormIsNotPartOfIt() {
    MessageData chunks = new MessageData(Buffer.buffer("other wire bytes"), 99, MESSAGE.sha256(), MESSAGE.messageIdHeader(),
        MessageData.Form.LINES, 1);
    assertThat(of(NETWORK, chunks, FROM, TO)).isEqualTo(of(NETWORK, MESSAGE, FROM, TO));
  }

  @Test
  void withoutExactlyOneMessageIdThereIsNone() {
    String sha = MESSAGE.sha256();
    assertThat(Fingerprint.of(NETWORK, message(null, sha), FROM, TO)).as("no Message-ID").isNull();
    MessageData two = new MessageData(MESSAGE.wire(), MESSAGE.size(), sha, "<m1@example.com>", MessageData.Form.DOT_STUFFED, 2);
    assertThat(Fingerprint.of(NETWORK, two, FROM, TO)).as("two Message-ID headers").isNull();
    MessageData countedButEmpty = new MessageData(MESSAGE.wire(), MESSAGE.size(), sha, null, MessageData.Form.DOT_STUFFED, 1);
    assertThat(Fingerprint.of(NETWORK, countedButEmpty, FROM, TO)).as("one Message-ID header without a value").isNull();
  }

  @Test
  void withoutAScopeOrARecipientThereIsNone() {
    assertThat(Fingerprint.of(null, MESSAGE, FROM, TO)).as("no scope").isNull();
    assertThat(Fingerprint.of(NETWORK, MESSAGE, FROM, List.of())).as("no accepted recipient").isNull();
  }

  @Test
  void theScopeIsTheAuthUserElseTheRelayNetworkRule() {
    assertThat(Fingerprint.scope("alice", null)).isEqualTo("user:alice");
    assertThat(Fingerprint.scope(null, "127.0.0.0/8")).isEqualTo("network:127.0.0.0/8");
    assertThat(Fingerprint.scope("alice", "127.0.0.0/8")).as("an authenticated client is its user, wherever it is")
        .isEqualTo("user:alice");
    assertThat(Fingerprint.scope(null, null)).as("neither: never recognised").isNull();
  }

  /** A user whose name reads as a network is still not that network: one tenant cannot match another's mail. */
  @Test
  void aUserAndANetworkOfTheSameNameAreTwoScopes() {
    String user = of(Fingerprint.scope("127.0.0.0/8", null), MESSAGE, FROM, TO);
    String network = of(Fingerprint.scope(null, "127.0.0.0/8"), MESSAGE, FROM, TO);
    assertThat(user).isNotNull().isNotEqualTo(network);
  }

  /** The fingerprint as it was computed before issue 33 (an encoded copy and a count String per field). */
  static java.util.UUID oldFingerprint(String scope, MessageData message, String mailFrom, List<String> recipients) {
    java.security.MessageDigest d = MessageData.newSha256();
    java.util.function.BiConsumer<java.security.MessageDigest, String> field = (md, value) -> {
      byte[] b = value.getBytes(StandardCharsets.UTF_8);
      md.update(Integer.toString(b.length).getBytes(StandardCharsets.US_ASCII));
      md.update((byte) ':');
      md.update(b);
    };
    field.accept(d, "ledgerpost-resubmission-v1");
    field.accept(d, scope);
    field.accept(d, message.messageIdHeader());
    field.accept(d, mailFrom);
    java.util.TreeSet<String> set = new java.util.TreeSet<>(recipients);
    field.accept(d, Integer.toString(set.size()));
    for (String r : set) {
      field.accept(d, r);
    }
    field.accept(d, message.sha256());
    java.nio.ByteBuffer digest = java.nio.ByteBuffer.wrap(d.digest());
    return new java.util.UUID(digest.getLong(), digest.getLong());
  }

  /** A field's bytes, written into a reused scratch since issue 33, hash as the old encoding did, at every length. */
  @Test
  void fieldsAndFingerprintsAreThoseOfTheOldEncoding() {
    Random random = new Random(33);
    byte[] scratch = new byte[4];
    for (int len : new int[] {0, 1, 9, 10, 11, 99, 100, 101, 116, 117, 118, 999, 1000, 1001, 12_345}) {
      for (String value : List.of("x".repeat(len), "\u00e9".repeat(len), "a".repeat(len) + "\u00fc", "\u007f".repeat(len))) {
        java.security.MessageDigest now = MessageData.newSha256();
        scratch = Fingerprint.field(now, value, scratch);
        java.security.MessageDigest before = MessageData.newSha256();
        byte[] b = value.getBytes(StandardCharsets.UTF_8);
        before.update((b.length + ":").getBytes(StandardCharsets.US_ASCII));
        before.update(b);
        assertThat(now.digest()).as("length %d", len).isEqualTo(before.digest());
      }
    }
    for (int k = 0; k < 2_000; k++) {
      List<String> to = new ArrayList<>();
      for (int n = 1 + random.nextInt(4); n > 0; n--) {
        to.add((random.nextBoolean() ? "r" : "\u00fc") + random.nextInt(5) + "@example.net");
      }
      String from = k % 3 == 0 ? "" : "s" + "x".repeat(random.nextInt(300)) + "@example.com";
      String scope = k % 2 == 0 ? Fingerprint.scope("t\u00e9nant", null) : NETWORK;
      assertThat(Fingerprint.of(scope, MESSAGE, from, to)).isEqualTo(oldFingerprint(scope, MESSAGE, from, to));
    }
  }
}
