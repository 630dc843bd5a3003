package dev.ledgerpost.intake.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.relay.MessageData;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class WireMessageTest {
  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  @Test
  void linesAreDotStuffedAndTheMessageItselfIsHashedAndMeasured() throws Exception {
    byte[] m = bytes("Message-ID: <a@b>\r\nSubject: x\r\n\r\n.one\r\n..two\r\n.\r\nend\r\n");
    MessageData d = WireMessage.of(m, 1000, "raw");
    assertThat(d.wire().toString(StandardCharsets.UTF_8))
        .isEqualTo("Message-ID: <a@b>\r\nSubject: x\r\n\r\n..one\r\n...two\r\n..\r\nend\r\n");
    assertThat(d.size()).isEqualTo(m.length);
    assertThat(d.sha256()).isEqualTo(sha256(m));
    assertThat(d.messageIdHeader()).isEqualTo("<a@b>");
  }

  @Test
  void aMissingFinalCrlfIsAddedAsAnSmtpClientWould() throws Exception {
    MessageData d = WireMessage.of(bytes("Subject: x\r\n\r\nlast"), 1000, "raw");
    assertThat(d.wire().toString(StandardCharsets.UTF_8)).isEqualTo("Subject: x\r\n\r\nlast\r\n");
    assertThat(d.sha256()).isEqualTo(sha256(bytes("Subject: x\r\n\r\nlast\r\n")));
    assertThat(d.messageIdHeader()).isNull();
  }

  @Test
  void foldedMessageIdIsUnfolded() {
    assertThat(WireMessage.of(bytes("Message-Id:\r\n <long@example.com>\r\n\r\nbody\r\n"), 1000, "raw").messageIdHeader())
        .isEqualTo("<long@example.com>");
  }

  @Test
  void bareLineEndingsAreRefusedAsSmtpRefusesThem() {
    for (String m : new String[] {"a\nb\r\n", "a\rb\r\n", "a\r\n\n", "a\r\nb\r"}) {
      assertThatThrownBy(() -> WireMessage.of(bytes(m), 1000, "raw"))
          .isInstanceOfSatisfying(InvalidSend.class, e -> {
            assertThat(e.status()).isEqualTo(422);
            assertThat(e.getMessage()).contains("bare CR or LF");
          });
    }
  }

  @Test
  void lineLengthAndSizeLimits() {
    assertThat(WireMessage.of(bytes("x".repeat(998) + "\r\n"), 2000, "raw").size()).isEqualTo(1000);
    assertThatThrownBy(() -> WireMessage.of(bytes("x".repeat(999) + "\r\n"), 2000, "raw"))
        .isInstanceOfSatisfying(InvalidSend.class, e -> assertThat(e.status()).isEqualTo(422));
    assertThatThrownBy(() -> WireMessage.of(bytes("x".repeat(100) + "\r\n"), 101, "raw"))
        .isInstanceOfSatisfying(InvalidSend.class, e -> assertThat(e.status()).isEqualTo(413));
    assertThatThrownBy(() -> WireMessage.of(new byte[0], 100, "raw"))
        .isInstanceOfSatisfying(InvalidSend.class, e -> assertThat(e.status()).isEqualTo(422));
  }
}
