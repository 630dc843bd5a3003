package dev.ledgerpost.intake.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.intake.http.SendRequest.Attachment;
import dev.ledgerpost.intake.http.SendRequest.Composed;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The composer writes CRLF and nothing else as a line break, whatever the encoder and the client's text do. */
class MimeComposerTest {

  /** Every CR is followed by LF and every LF preceded by CR. */
  static void assertOnlyCrlf(byte[] message) {
    for (int i = 0; i < message.length; i++) {
      if (message[i] == '\r') {
        assertThat(i + 1 < message.length && message[i + 1] == '\n').as("CR at %d is followed by LF", i).isTrue();
      } else if (message[i] == '\n') {
        assertThat(i > 0 && message[i - 1] == '\r').as("LF at %d follows CR", i).isTrue();
      }
    }
  }

  @Test
  void everyLineBreakBecomesCrlf() {
    assertThat(MimeComposer.crlf("a\rb\nc\r\nd\r\r\ne\n\r")).isEqualTo("a\r\nb\r\nc\r\nd\r\n\r\ne\r\n\r\n");
  }

  @Test
  void aComposedMessageWithFoldedHeadersManyRecipientsAndMixedLineEndingsHasOnlyCrlf() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("X-Long", "Grüße aus Köln ✓ ".repeat(20));
    List<String> to = IntStream.range(0, 30).mapToObj(i -> "Empfänger " + i + " <to" + i + "@example.net>").toList();
    Composed c = new Composed("Zoë <zoe@example.com>", "zoe@example.com", to, List.of("cc@example.net"), List.of(),
        "Übersicht für März — ".repeat(10), "mac\runix\nwindows\r\nboth\r\r\n.\n", "<p>" + "ü ".repeat(600) + "</p>\r",
        headers, List.of(new Attachment("Geschäftsbericht für die Übersicht im März.bin", "application/octet-stream",
            new byte[] {'\r', '\n', '\n', '\r', 0, (byte) 0xff})));

    byte[] message = MimeComposer.compose(c, "<id@gateway.test>", "gateway.test");

    assertOnlyCrlf(message);
    assertThat(WireMessage.of(message, 1_000_000, "(composed message)").size()).isEqualTo(message.length);
    assertThat(new String(message, StandardCharsets.UTF_8)).contains("\r\n ="); // folded header lines
  }
}
